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
