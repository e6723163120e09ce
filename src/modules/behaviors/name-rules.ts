import { ERRORS } from '../../api/error-factories.js'

/** The longest regular expression a `limit_file_regex` behavior takes. */
export const MAX_REGEX_LENGTH = 256
/** The highest `max_length` of a `limit_filename_length` behavior. */
export const MAX_NAME_LENGTH_LIMIT = 255

/** One upload rule of a folder, read from a behavior's value. */
export type NameRule =
  | {
      behavior: 'limit_file_extensions'
      id: number
      path: string
      extensions: string[]
      mode: 'allow' | 'deny'
    }
  | { behavior: 'limit_file_regex'; id: number; path: string; regex: string }
  | { behavior: 'limit_filename_length'; id: number; path: string; maxLength: number }

export const NAME_RULE_TYPES: readonly string[] = [
  'limit_file_extensions',
  'limit_file_regex',
  'limit_filename_length',
]

/**
 * Why a pattern is refused, or undefined. Besides its length and syntax, a quantified group that
 * itself holds a quantifier or an alternative (`(a+)+`, `(x*y)*`, `(a|aa)+`) is refused: such nesting is what
 * makes a backtracking engine take exponential time on a near miss. With that, the pattern's
 * length cap and the names' own (at most 255 characters, matched one at a time) keep each test
 * short.
 */
export function checkRegex(pattern: string): string | undefined {
  if (pattern.length > MAX_REGEX_LENGTH) return `is too long (maximum is ${MAX_REGEX_LENGTH} characters)`
  try {
    new RegExp(pattern, 'u')
  } catch (err) {
    return `is not a valid regular expression: ${(err as Error).message}`
  }
  if (/\\[1-9]|\\k</.test(pattern)) return 'must not use back-references'
  if (hasNestedQuantifier(pattern)) {
    return 'must not repeat a group that itself holds a repetition or an alternative, such as (a+)+ or (a|aa)+: it can take exponential time'
  }
  return undefined
}

function hasNestedQuantifier(p: string): boolean {
  // For each open group: whether a repetition or an alternative occurred inside it.
  const stack: boolean[] = []
  let inClass = false
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!
    if (c === '\\') {
      i++
      continue
    }
    if (inClass) {
      if (c === ']') inClass = false
      continue
    }
    if (c === '[') inClass = true
    else if (c === '(') stack.push(false)
    else if (c === ')') {
      const inner = stack.pop() ?? false
      const next = p[i + 1]
      const repeated = next === '*' || next === '+' || next === '{'
      if (inner && repeated) return true
      if (inner || repeated || next === '?') markOuter(stack)
    } else if (c === '*' || c === '+' || c === '|') markOuter(stack)
    // `?` after `(` opens a group form, after a quantifier makes it lazy: neither repeats.
    else if (c === '?' && p[i - 1] !== '(' && !'*+?}'.includes(p[i - 1] ?? '')) markOuter(stack)
    // `{n}` repeats a fixed number of times; `{n,}` and `{n,m}` vary.
    else if (c === '{' && !/^\{\d+\}/.test(p.slice(i))) markOuter(stack)
  }
  return false
}

function markOuter(stack: boolean[]): void {
  if (stack.length) stack[stack.length - 1] = true
}

/** Compiled patterns, by their text: each is compiled once per process, not per upload. */
const compiled = new Map<string, RegExp>()
const MAX_COMPILED = 1000

function regexOf(pattern: string): RegExp {
  let re = compiled.get(pattern)
  if (!re) {
    if (compiled.size >= MAX_COMPILED) compiled.clear()
    re = new RegExp(pattern, 'u')
    compiled.set(pattern, re)
  }
  return re
}

/** `report.CSV` → `csv`; no extension: ''. A leading dot (`.env`) is a name, not an extension. */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : ''
}

/**
 * Refuses a file name that one of the rules does not take: the extension rules with
 * `processing-failure/invalid-file-type`, the pattern and the length with
 * `processing-failure/invalid-filename`. Each message names the folder whose behavior refused.
 */
export function checkName(name: string, rules: readonly NameRule[]): void {
  for (const r of rules) {
    const where = r.path === '' ? 'the root folder' : r.path
    switch (r.behavior) {
      case 'limit_file_extensions': {
        const ext = extensionOf(name)
        const listed = r.extensions.includes(ext)
        if (r.mode === 'allow' ? !listed : listed) {
          const list = r.extensions.map((e) => `.${e}`).join(', ')
          throw ERRORS.invalidFileType(
            r.mode === 'allow'
              ? `${where} accepts only files ending in ${list}: ${name} is refused`
              : `${where} does not accept files ending in ${list}: ${name} is refused`,
          )
        }
        break
      }
      case 'limit_file_regex':
        if (!regexOf(r.regex).test(name)) {
          throw ERRORS.invalidFilename(`${where} accepts only names matching ${r.regex}: ${name} is refused`)
        }
        break
      case 'limit_filename_length':
        if ([...name].length > r.maxLength) {
          throw ERRORS.invalidFilename(
            `${where} accepts names of at most ${r.maxLength} characters: ${name} is refused`,
          )
        }
        break
    }
  }
}
