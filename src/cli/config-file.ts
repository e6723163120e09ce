import fs from 'node:fs'
import { parseEnv } from 'node:util'
import { ConfigError } from '../config.js'

type Env = Record<string, string | undefined>

/**
 * The settings Wharf runs with: the environment, and where `WHARF_CONFIG` names a file, the
 * settings in it (`NAME=value` lines, `#` comments, quotes as in a shell or a systemd
 * EnvironmentFile). A variable set in the environment wins over the same one in the file, so one
 * setting can be changed for one run without editing the file.
 */
export function settingsEnvironment(env: Env = process.env): Env {
  const file = env['WHARF_CONFIG']
  if (file === undefined || file === '') return env
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    throw new ConfigError([`WHARF_CONFIG names ${file}, which cannot be read (${code})`])
  }
  return { ...parseEnv(text), ...env }
}
