import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { settingsEnvironment } from '../src/cli/config-file.js'
import { loadConfig } from '../src/config.js'
import { freePort, projectRoot, serverProcesses } from './helpers/server-process.js'

const run = promisify(execFile)
const read = (file: string) => fs.readFileSync(path.join(projectRoot, file), 'utf8')

/** The Dockerfile's instructions, continuation lines joined, comments left out. */
function instructions(): { op: string; args: string }[] {
  return read('Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/)
      return { op: op.toUpperCase(), args: rest.join(' ') }
    })
}

describe('the container image', () => {
  const all = instructions()
  const final = all.slice(all.map((i) => i.op).lastIndexOf('FROM'))
  const servers = serverProcesses()
  afterAll(() => servers.killAll())

  it('builds in two stages and runs as an unprivileged user with DATA_DIR as its volume', () => {
    expect(all.filter((i) => i.op === 'FROM')).toHaveLength(2)
    const user = final.filter((i) => i.op === 'USER').at(-1)?.args
    expect(user).toBe('wharf')
    const env = final.find((i) => i.op === 'ENV')?.args ?? ''
    expect(env).toMatch(/DATA_DIR=\/data/)
    expect(final.find((i) => i.op === 'VOLUME')?.args).toBe('["/data"]')
    const cmd = JSON.parse(final.find((i) => i.op === 'CMD')?.args ?? '[]') as string[]
    expect(cmd.slice(-2)).toEqual(['dist/cli.js', 'serve'])
    // The start flags are npm start's.
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts['start']
    expect(cmd.join(' ')).toBe(start)
  })

  it("has a health check that passes on a ready server's /readyz and fails where none answers", async () => {
    const check = final.find((i) => i.op === 'HEALTHCHECK')?.args ?? ''
    const exec = JSON.parse(check.slice(check.indexOf('CMD') + 3).trim()) as string[]
    expect(exec[0]).toBe('node')
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-image-'))
    try {
      const server = await servers.serve({
        DATA_DIR: dataDir,
        PATH: process.env['PATH'],
        ADMIN_PASSWORD: 'admin-password-1',
      })
      const port = new URL(server.api).port
      const ok = await run(process.execPath, exec.slice(1), { env: { ...process.env, PORT: port } }).then(
        () => 0,
        (e: { code: number }) => e.code,
      )
      expect(ok).toBe(0)
      const closed = String(await freePort())
      const failed = await run(process.execPath, exec.slice(1), {
        env: { ...process.env, PORT: closed },
      }).then(
        () => 0,
        (e: { code: number }) => e.code,
      )
      expect(failed).toBe(1)
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml')) as {
    services: Record<
      string,
      { environment?: Record<string, string>; volumes?: string[]; depends_on?: unknown }
    >
  }
  /** Compose's `${NAME:-default}` and `${NAME:?message}`, with the values of `given`. */
  const interpolate = (value: string, given: Record<string, string>) =>
    value.replace(
      /\$\{(\w+)(?::[-?]([^}]*))?\}/g,
      (_m, name: string, fallback: string | undefined) => given[name] ?? fallback ?? '',
    )

  it("gives Wharf a valid configuration on PostgreSQL and the S3-compatible store, its data in the image's volume", () => {
    const wharf = compose.services['wharf']!
    const given = {
      WHARF_ADMIN_PASSWORD: 'a-long-password',
      POSTGRES_PASSWORD: 'pg',
      MINIO_ROOT_PASSWORD: 'minio-secret',
    }
    const env = Object.fromEntries(
      Object.entries(wharf.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), given)]),
    )
    const config = loadConfig({ ...env, DATA_DIR: '/data', HOST: '0.0.0.0' })
    expect(config.databaseUrl).toBe('postgres://wharf:pg@postgres:5432/wharf')
    expect(config.blobs).toMatchObject({
      store: 's3',
      s3: { bucket: 'wharf', endpoint: 'http://minio:9000' },
    })
    expect(config.sftp.enabled).toBe(true)
    expect(wharf.volumes).toContain('wharf-data:/data')
    expect(Object.keys(compose.services).sort()).toEqual(['bucket', 'minio', 'postgres', 'wharf'])
  })
})

describe('the systemd unit and its settings file', () => {
  it('the sample settings file is a valid configuration', () => {
    const config = loadConfig(
      settingsEnvironment({ WHARF_CONFIG: path.join(projectRoot, 'docs/wharf.env.example') }),
    )
    expect(config.dataDir).toBe('/var/lib/wharf')
    expect(config.baseUrl).toBe('https://files.example.com')
    expect(config.sftp).toMatchObject({ enabled: true, port: 2022 })
  })

  it('the unit reads it, writes only its state directory, and passes systemd-analyze verify', async () => {
    const unit = read('docs/wharf.service')
    expect(unit).toMatch(/^Environment=WHARF_CONFIG=\/etc\/wharf\/wharf\.env$/m)
    expect(unit).toMatch(/^ReadWritePaths=\/var\/lib\/wharf$/m)
    expect(unit).toMatch(/^ProtectSystem=strict$/m)
    expect(unit).toMatch(/^NoNewPrivileges=yes$/m)
    const analyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((f) => fs.existsSync(f))
    if (!analyze) return
    const out = await run(analyze, ['verify', path.join(projectRoot, 'docs/wharf.service')]).catch(
      (e: { code: number; stderr: string }) => e,
    )
    expect(out.stderr).toBe('')
  })
})
