/**
 * Requests built only from Wharf's Swagger 2.0 document: every required parameter, optional ones
 * with values drawn from their type, enum, format, pattern and range, in a few combinations per
 * operation. Which records a value names (a path, an id, a user) is not in the document: the test
 * gives those as `refs`, values of records it created, so that requests are about existing state.
 */

export interface Operation {
  method: string
  path: string
  params: any[]
  /** The operation's own security; `[]` means it takes no credentials. */
  security?: unknown[]
}

export interface BuiltRequest {
  method: string
  /** Relative to /api/rest/v1, query string included. */
  url: string
  headers: Record<string, string>
  body?: Record<string, unknown>
  /** `in:name=value` of every enum value sent, so that each value of an enum gets sent once. */
  sent: string[]
}

/** Values of records the test made, by the name of the parameter or field that names them. */
export type Refs = Record<string, string | number>

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch']

/** Every operation of the document, parameters with `$ref`s resolved. */
export function operations(doc: any): Operation[] {
  const out: Operation[] = []
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      if (!HTTP_METHODS.includes(method)) continue
      const params = (op.parameters ?? []).map((p: any) => resolve(doc, p))
      for (const p of params) if (p.schema) p.schema = resolve(doc, p.schema)
      out.push({ method: method.toUpperCase(), path, params, security: op.security })
    }
  }
  return out
}

function resolve(doc: any, o: any): any {
  if (o?.$ref === undefined) return o
  const m = /^#\/(definitions|parameters)\/(.+)$/.exec(o.$ref)
  if (!m) throw new Error(`unresolvable $ref ${o.$ref}`)
  return resolve(doc, doc[m[1]!][m[2]!])
}

/** A small seeded generator (mulberry32): the same requests on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface Draw {
  rng: () => number
  refs: Refs
  /** A value matching a documented pattern (throws when it has none). */
  patterns: (pattern: string, name: string) => string
  /** Increases on every value, so that names drawn from letters are unique. */
  seq: { n: number }
  /**
   * Rules between fields that the document states only in words (Swagger 2.0 cannot say them):
   * a field that repeats another's value, and a field another one's value needs.
   */
  sameAs: Record<string, string>
  needs: Record<string, string>
}

const pick = <T>(d: Draw, xs: readonly T[]): T => xs[Math.floor(d.rng() * xs.length)]!

// Every form the document's date-time description promises, all in the future (expiry dates
// must be): with a zone, with an offset, with fractions, and a date alone.
const DATE_TIMES = [
  '2099-01-02T03:04:05Z',
  '2099-01-02T03:04:05.123+02:00',
  '2099-01-02',
  '2099-01-02T03:04:05',
]
const LATER_DATE_TIMES = ['2099-06-01T00:00:00Z', '2099-06-01', '2099-06-01T12:00:00.5-01:00']

/** A value of `schema` for the parameter or field `name`, or undefined when the document gives no type. */
export function draw(d: Draw, name: string, schema: any): unknown {
  d.seq.n++
  if (name in d.refs) return d.refs[name]
  if (schema.enum) return pick(d, schema.enum)
  switch (schema.type) {
    case 'boolean':
      return pick(d, [true, false])
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? 0
      const max = schema.maximum ?? min + 1000
      return pick(d, [min, Math.min(max, min + 1 + Math.floor(d.rng() * 9)), max])
    }
    case 'array': {
      if (!schema.items) return undefined
      const n = 1 + Math.floor(d.rng() * Math.min(3, schema.maxItems ?? 3))
      return Array.from({ length: n }, () => draw(d, name, schema.items))
    }
    case 'string': {
      if (schema.format === 'date-time')
        return pick(d, /^end|_end|until/.test(name) ? LATER_DATE_TIMES : DATE_TIMES)
      let v: string
      if (schema.pattern !== undefined) {
        v = d.patterns(schema.pattern, name)
      } else {
        v = `${pick(d, ['abc', 'Wharf', 'xyz'])}${letters(d.seq.n)}`
      }
      const max = schema.maxLength ?? Number.POSITIVE_INFINITY
      if (v.length > max) v = v.slice(0, max)
      while (v.length < (schema.minLength ?? 0)) v += 'a'
      return v
    }
    case 'object':
      // An object in an array (a share's recipients): each of its fields drawn.
      return Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Record<string, unknown>)
          .map(([k, p]) => [k, draw(d, k, p)])
          .filter(([, v]) => v !== undefined),
      )
    default:
      // A field without a type (a read-only echo, an ignored field): the document says nothing
      // to draw a value from.
      return undefined
  }
}

/** A number written in letters only, so generated names stay plain letters. */
export const letters = (n: number) =>
  n.toString(26).replace(/./g, (c) => String.fromCharCode(97 + Number.parseInt(c, 26)))

/**
 * The optional parameters to send: of those sharing an `x-exclusive` group (the document's way of
 * saying "one of these per request"; a field may be in several), at most one per group, and
 * exactly one when a member is marked `x-exclusive-required`; `some` decides for the others.
 */
export function choose(d: Draw, optional: Field[], some: () => boolean): Field[] {
  const groupsOf = (f: Field): string[] => [f.schema['x-exclusive'] ?? []].flat()
  const taken = new Set<string>()
  const out: Field[] = []
  const add = (f: Field) => {
    out.push(f)
    for (const g of groupsOf(f)) taken.add(g)
  }
  const free = (f: Field) => groupsOf(f).every((g) => !taken.has(g))
  // Required groups first, one member each, picked at random.
  for (const f of optional.filter((o) => o.schema['x-exclusive-required'] === true)) {
    if (!free(f)) continue
    const members = optional.filter(
      (o) => o.schema['x-exclusive-required'] === true && groupsOf(o)[0] === groupsOf(f)[0],
    )
    add(pick(d, members))
  }
  // The others in a shuffled order, so any member of a group may be the one sent.
  const rest = optional.filter((o) => !out.includes(o) && o.schema['x-exclusive-required'] !== true)
  const order = rest.map((f) => ({ f, k: d.rng() })).sort((x, y) => x.k - y.k)
  for (const { f } of order) if (some() && free(f)) add(f)
  // Sent in the document's order.
  return optional.filter((o) => out.includes(o))
}

interface Field {
  name: string
  in: string
  schema: any
  required: boolean
}

/** Each enum value of the operation's parameters and fields, as `name=value`. */
export function enumValues(op: Operation): { name: string; value: unknown }[] {
  const out: { name: string; value: unknown }[] = []
  for (const p of op.params) {
    const fields = p.in === 'body' ? Object.entries<any>(p.schema.properties ?? {}) : [[p.name, p] as const]
    for (const [name, s] of fields) for (const value of s.enum ?? []) out.push({ name, value })
  }
  return out
}

/** Variants of one operation: required parameters only, every optional one, random subsets. */
export function build(
  op: Operation,
  d: Draw,
  variant: number,
  only?: { name: string; value: unknown },
): BuiltRequest {
  const all: Field[] = []
  for (const p of op.params) {
    if (p.in === 'body') {
      const req: string[] = p.schema.required ?? []
      for (const [name, s] of Object.entries<any>(p.schema.properties ?? {})) {
        all.push({ name, in: 'body', schema: s, required: req.includes(name) })
      }
    } else {
      all.push({ name: p.name, in: p.in, schema: p, required: p.required === true })
    }
  }
  const optional = all.filter((a) => !a.required)
  // `only`: one optional parameter with a given value (the sweep over an enum's values).
  const groupsOf = (f: Field): string[] => [f.schema['x-exclusive'] ?? []].flat()
  const forced = optional.filter((o) => o.name === only?.name)
  const others = optional.filter(
    (o) => !forced.some((f) => f === o || groupsOf(f).some((g) => groupsOf(o).includes(g))),
  )
  const chosen = only
    ? [...forced, ...choose(d, others, () => false)]
    : choose(d, optional, () => variant === 1 || (variant > 1 && d.rng() < 0.4))
  const send = [...all.filter((a) => a.required), ...chosen]
  const drawn: Record<string, unknown> = {}

  let path = op.path
  const query = new URLSearchParams()
  const headers: Record<string, string> = {}
  let body: Record<string, unknown> | undefined
  const sent: string[] = []
  for (let i = 0; i < send.length; i++) {
    const a = send[i]!
    const like = d.sameAs[a.name]
    const v =
      only?.name === a.name
        ? only.value
        : like !== undefined && like in drawn
          ? drawn[like]
          : draw(d, a.name, a.schema)
    if (v === undefined) continue
    drawn[a.name] = v
    const need = d.needs[`${a.name}=${String(v)}`] ?? d.needs[a.name]
    const needed = all.find((f) => f.name === need)
    if (needed && !send.includes(needed)) send.push(needed)
    if (a.schema.enum) sent.push(`${a.name}=${JSON.stringify(v)}`)
    if (a.in === 'path') {
      const text = String(v)
      // {path} takes raw slashes: each segment encoded, the slashes kept.
      path = path.replace(`{${a.name}}`, text.split('/').map(encodeURIComponent).join('/'))
    } else if (a.in === 'query') query.append(a.name, String(v))
    else if (a.in === 'header') headers[a.name] = String(v)
    else body = { ...(body ?? {}), [a.name]: v }
  }
  // A body the document requires is sent even when none of its fields was chosen.
  if (!body && op.params.some((p) => p.in === 'body' && p.required)) body = {}
  const qs = query.toString()
  return { method: op.method, url: qs ? `${path}?${qs}` : path, headers, ...(body ? { body } : {}), sent }
}
