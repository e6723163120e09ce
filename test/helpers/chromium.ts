import fs from 'node:fs'

/** Debian's Chromium (or CHROMIUM_PATH), if this machine has it; browser tests skip without it. */
export function chromiumPath(): string | null {
  const candidates = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser']
  for (const c of candidates) if (c && fs.existsSync(c)) return c
  return null
}
