import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { settingsEnvironment } from '../src/cli/config-file.js'
import { ConfigError } from '../src/config.js'
import { builtServer } from './helpers/server-process.js'

const run = promisify(execFile)
const dirs: string[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true })
})

async function file(content: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-config-'))
  dirs.push(dir)
  const f = path.join(dir, 'wharf.env')
  await fs.writeFile(f, content)
  return f
}

describe('settings from WHARF_CONFIG', () => {
  it('reads NAME=value lines, comments and quotes; the environment wins over the file', async () => {
    const f = await file(
      '# Wharf\nPORT=8123\nBASE_URL="https://files.example.com"\nexport SFTP_ENABLED=true\nHOST=0.0.0.0\n',
    )
    expect(settingsEnvironment({ WHARF_CONFIG: f, HOST: '127.0.0.1' })).toEqual({
      WHARF_CONFIG: f,
      PORT: '8123',
      BASE_URL: 'https://files.example.com',
      SFTP_ENABLED: 'true',
      HOST: '127.0.0.1',
    })
    expect(settingsEnvironment({ PORT: '1' })).toEqual({ PORT: '1' })
  })

  it('refuses a file it cannot read, naming it', () => {
    const missing = path.join(os.tmpdir(), 'no-such-wharf.env')
    const err = (() => {
      try {
        settingsEnvironment({ WHARF_CONFIG: missing })
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as Error).message).toBe(
      `Invalid configuration:\n  - WHARF_CONFIG names ${missing}, which cannot be read (ENOENT)`,
    )
  })
})

describe('wharf config check', () => {
  const { BASE_URL: _, ...inherited } = process.env
  const check = (env: Record<string, string>) =>
    run(process.execPath, [builtServer(), 'config', 'check'], { env: { ...inherited, ...env } }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    )

  it('says what a valid configuration amounts to, without secrets, and starts nothing', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-config-data-'))
    dirs.push(dataDir)
    const f = await file(
      `DATA_DIR=${dataDir}\nPORT=8123\nDATABASE_URL=postgres://wharf:s3cret@db.example:5432/wharf\nSFTP_ENABLED=true\nSFTP_PORT=2222\n`,
    )
    const out = await check({ WHARF_CONFIG: f })
    expect(out.stdout).toBe(
      [
        'BASE_URL http://127.0.0.1:8123',
        'HTTP 127.0.0.1:8123',
        'database PostgreSQL postgres://wharf:***@db.example:5432/wharf',
        `files on disk ${dataDir}/storage`,
        'SFTP 127.0.0.1:2222',
        'FTP off',
        'WebDAV http://127.0.0.1:8123/dav/',
        'configuration is valid',
        '',
      ].join('\n'),
    )
    expect(out.stdout).not.toContain('s3cret')
    // Nothing was created: no database, no storage.
    expect(await fs.readdir(dataDir)).toEqual([])
  })

  it('lists every problem and exits 1', async () => {
    const f = await file('PORT=eighty\nBLOB_STORE=s3\n')
    const out = (await check({ WHARF_CONFIG: f })) as { code: number; stderr: string }
    expect(out.code).toBe(1)
    expect(out.stderr).toMatch(/^Invalid configuration:\n {2}- PORT /)
    expect(out.stderr).toContain('S3_BUCKET is required when BLOB_STORE=s3')
  })
})
