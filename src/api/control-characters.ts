/**
 * What Wharf means by a control character wherever it refuses one (paths, new names, listener
 * URLs): Unicode's category Cc, that is C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F).
 * None of them prints, so a name holding one looks like another name; C1's U+0085 even breaks a
 * line in some readers. One definition, so that every check refuses the same set.
 */
const CONTROL_CHARACTER = /\p{Cc}/u

export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text)
}

/**
 * Free text a person types and others read (a key's name, a user's name, a description): one
 * line, or lines (a description may break lines). Neither takes control characters (`Cc`) but the
 * line breaks and tab of `lines`, nor the bidirectional embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069), which reorder what follows them: U+202E makes a name read
 * backwards in the web interface and in logs. The implicit marks U+200E, U+200F and U+061C stay
 * allowed: they order only the characters beside them, and right-to-left text needs them. One line
 * refuses U+2028 and U+2029 too, which break lines as a newline does.
 */
export type TextShape = 'line' | 'lines'

const BIDI_CONTROLS = '\\u202a-\\u202e\\u2066-\\u2069'

/** The rule as a regular expression (ECMA-262, any flags), for schemas and the Swagger document. */
export const TEXT_PATTERNS: Readonly<Record<TextShape, string>> = {
  line: `^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029${BIDI_CONTROLS}]*$`,
  lines: `^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f${BIDI_CONTROLS}]*$`,
}

const REFUSED: Readonly<Record<TextShape, RegExp>> = {
  line: new RegExp(TEXT_PATTERNS.line.replace('^[^', '[').replace(']*$', ']')),
  lines: new RegExp(TEXT_PATTERNS.lines.replace('^[^', '[').replace(']*$', ']')),
}

/** The first character `shape` refuses in `text`, as U+XXXX with its position; undefined if none. */
export function refusedTextCharacter(text: string, shape: TextShape): string | undefined {
  const m = REFUSED[shape].exec(text)
  if (!m) return undefined
  const code = m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')
  return `U+${code} at character ${m.index + 1}`
}
