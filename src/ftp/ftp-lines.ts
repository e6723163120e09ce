/** How a control connection's bytes become commands. */

/** Telnet commands (IAC …, which some clients send before ABOR) are dropped; the rest is UTF-8. */
export function decodeLine(raw: Buffer): string {
  const bytes: number[] = []
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!
    if (b === 0xff) {
      const next = raw[i + 1]
      i += next !== undefined && next >= 0xfb && next <= 0xfe ? 2 : 1
      continue
    }
    bytes.push(b)
  }
  let text = Buffer.from(bytes).toString('utf8')
  if (text.endsWith('\r')) text = text.slice(0, -1)
  return text
}

export function verbOf(line: string): string {
  const space = line.indexOf(' ')
  return (space < 0 ? line : line.slice(0, space)).toUpperCase()
}

/** A command word echoed back: printable and short. */
export function printable(verb: string): string {
  return verb.replace(/[^\x21-\x7e]/g, '?').slice(0, 20)
}
