import { DavError } from './dav-errors.js'

/** One condition of an `If` list: a state token (`<opaquelocktoken:…>`) or an entity tag, maybe negated. */
export interface IfCondition {
  not: boolean
  token?: string
  etag?: string
}

/** A list of conditions, all of which must hold, for the request's resource or a tagged one. */
export interface IfList {
  /** The resource tag (a URL or path), when the list names one. */
  resource?: string
  conditions: IfCondition[]
}

/**
 * Parses an `If` header (RFC 4918 §10.4): untagged lists `(<token> ["etag"])` or tagged lists
 * `<url> (…)`. Anything else is 400.
 */
export function parseIf(header: string): IfList[] {
  const lists: IfList[] = []
  let i = 0
  let resource: string | undefined
  const bad = (why: string) => new DavError(400, `Malformed If header: ${why}`)
  const skip = () => {
    while (i < header.length && /\s/.test(header[i]!)) i++
  }
  const until = (close: string) => {
    const end = header.indexOf(close, i + 1)
    if (end === -1) throw bad(`missing ${close}`)
    const value = header.slice(i + 1, end)
    i = end + 1
    return value
  }
  skip()
  while (i < header.length) {
    const c = header[i]
    if (c === '<') {
      resource = until('>')
    } else if (c === '(') {
      i++
      const conditions: IfCondition[] = []
      for (;;) {
        skip()
        if (i >= header.length) throw bad('unclosed list')
        if (header[i] === ')') {
          i++
          break
        }
        let not = false
        if (header.slice(i, i + 3).toLowerCase() === 'not') {
          not = true
          i += 3
          skip()
        }
        if (header[i] === '<') conditions.push({ not, token: until('>') })
        else if (header[i] === '[') conditions.push({ not, etag: until(']') })
        else throw bad('expected <state-token> or [entity-tag]')
      }
      if (conditions.length === 0) throw bad('empty list')
      lists.push({ ...(resource !== undefined ? { resource } : {}), conditions })
    } else {
      throw bad(`unexpected "${c}"`)
    }
    skip()
  }
  if (lists.length === 0) throw bad('no condition list')
  return lists
}

/** Every state token an `If` header submits (not negated): the lock tokens the client holds. */
export function submittedTokens(lists: IfList[]): Set<string> {
  const tokens = new Set<string>()
  for (const l of lists)
    for (const c of l.conditions) if (c.token !== undefined && !c.not) tokens.add(c.token)
  return tokens
}

/** What a condition is checked against: the resource's lock tokens and entity tags. */
export interface ResourceState {
  tokens: Set<string>
  /** Whether an entity tag (without `W/`) names the resource's current version; null: no file. */
  etagMatches: ((tag: string) => boolean) | null
}

/**
 * True when at least one list holds (RFC 4918 §10.4.3); each list's conditions are checked
 * against the resource it names, or the request's resource when untagged.
 */
export async function ifHolds(
  lists: IfList[],
  stateOf: (resource: string | undefined) => Promise<ResourceState>,
): Promise<boolean> {
  for (const list of lists) {
    const state = await stateOf(list.resource)
    const holds = list.conditions.every((c) => {
      const match =
        c.token !== undefined
          ? state.tokens.has(c.token)
          : state.etagMatches?.(c.etag!.replace(/^W\//, '')) === true
      return c.not ? !match : match
    })
    if (holds) return true
  }
  return false
}
