import { type ChildProcess, execFile, spawn } from 'node:child_process'
import fs from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

/**
 * The real artefacts: `npm start` runs dist/cli.js serve, operators run the `wharf` CLI. These
 * tests build once, then run them as child processes on SQLite (the embedded default).
 */
const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '..')
const cli = path.join(root, 'dist', 'cli.js')
const children: ChildProcess[] = []
const dirs: string[] = []

async function tempDir(): Promise<string> {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-proc-'))
  dirs.push(d)
  return d
}

function baseEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    DATA_DIR: dataDir,
    ...extra,
  }
  return env
}

async function wharf(args: string[], env: NodeJS.ProcessEnv) {
  try {
    const r = await run(process.execPath, [cli, ...args], { env, cwd: root })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string }
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}

interface Served {
  child: ChildProcess
  url: string
  stdout: () => string
  exited: Promise<number | null>
}

async function serve(env: NodeJS.ProcessEnv): Promise<Served> {
  const port = await freePort()
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: { SFTP_PORT: '0', ...env, PORT: String(port), LOG_LEVEL: 'info' },
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (d) => {
    out += d
  })
  child.stderr!.on('data', (d) => {
    out += d
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (out.includes('Wharf is listening')) {
        child.stdout!.off('data', onData)
        resolve()
      }
    }
    child.stdout!.on('data', onData)
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })
  return { child, url: `http://127.0.0.1:${port}/api/rest/v1`, stdout: () => out, exited }
}

async function loginStatus(url: string, username: string, password: string): Promise<number> {
  const r = await fetch(`${url}/sessions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username, password }),
  })
  return r.status
}

beforeAll(async () => {
  await run(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
    },
  )
}, 120_000)

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true })
})

describe('wharf command line and server process (sqlite)', () => {
  it('migrates a fresh data folder once, then reports it up to date', async () => {
    const env = baseEnv(await tempDir())
    const first = await wharf(['migrate'], env)
    expect(first.code).toBe(0)
    expect(first.stdout).toContain('applied: 001-platform, 002-session-expiry, 003-files')
    const second = await wharf(['migrate'], env)
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('database is up to date')
  })

  it('refuses a bad configuration with every problem named, and exits 1', async () => {
    const r = await wharf(['migrate'], baseEnv(await tempDir(), { PORT: 'abc', LOG_LEVEL: 'loud' }))
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('PORT')
    expect(r.stderr).toContain('LOG_LEVEL')
  })

  it('prints a generated admin password once on first start, and it logs in', async () => {
    const env = baseEnv(await tempDir())
    const first = await serve(env)
    const m = /password:\s+(\S+)/.exec(first.stdout())
    expect(m).not.toBeNull()
    const password = m![1]!
    expect(await loginStatus(first.url, 'admin', password)).toBe(201)
    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)

    const second = await serve(env)
    expect(second.stdout()).not.toContain(password)
    expect(await loginStatus(second.url, 'admin', password)).toBe(201)
    second.child.kill('SIGTERM')
    expect(await second.exited).toBe(0)
  })

  it('uses ADMIN_USERNAME and ADMIN_PASSWORD when set, and never prints the password', async () => {
    const env = baseEnv(await tempDir(), { ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'chosen-password-9' })
    const s = await serve(env)
    expect(s.stdout()).not.toContain('chosen-password-9')
    expect(await loginStatus(s.url, 'root', 'chosen-password-9')).toBe(201)
    // One JSON access-log line per request.
    await vi.waitFor(() => expect(s.stdout()).toContain('"msg":"request"'), { timeout: 10_000, interval: 50 })
    const line = s
      .stdout()
      .split('\n')
      .find((l) => l.includes('"msg":"request"'))!
    expect(JSON.parse(line)).toMatchObject({ method: 'POST', url: '/api/rest/v1/sessions', status: 201 })
    s.child.kill('SIGTERM')
    expect(await s.exited).toBe(0)
  })

  // Five processes one after another (four commands and a server), each loading Wharf: more than
  // the usual time limit on a loaded machine.
  it('creates users and keys from the command line, and the keys work against the server', async () => {
    const env = baseEnv(await tempDir(), { ADMIN_PASSWORD: 'admin-password-1' })
    const u = await wharf(['users', 'create', '--username', 'alice', '--password', 'alice-password-1'], env)
    expect(u.code).toBe(0)
    const user = JSON.parse(u.stdout)
    expect(user.username).toBe('alice')

    const k = await wharf(['api-keys', 'create', '--username', 'alice', '--name', 'ci'], env)
    expect(k.code).toBe(0)
    const key = JSON.parse(k.stdout)
    expect(key.key).toMatch(/^[0-9a-f]{64}$/)
    expect(key.user_id).toBe(user.id)

    const sw = await wharf(['api-keys', 'create', '--site-wide'], env)
    expect(sw.code).toBe(0)
    expect(JSON.parse(sw.stdout).user_id).toBeNull()

    const bad = await wharf(['api-keys', 'create', '--username', 'nobody'], env)
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('not-found/user-not-found')

    const s = await serve(env)
    const r = await fetch(`${s.url}/api_key`, { headers: { 'X-ServiceAPI-Key': key.key } })
    expect(r.status).toBe(200)
    expect(((await r.json()) as { name: string }).name).toBe('ci')
    s.child.kill('SIGTERM')
    expect(await s.exited).toBe(0)
  }, 90_000)

  it('finishes an in-flight request on SIGTERM before it exits', async () => {
    const env = baseEnv(await tempDir(), { ADMIN_PASSWORD: 'admin-password-1' })
    const s = await serve(env)
    const body = JSON.stringify({ username: 'admin', password: 'admin-password-1' })
    const u = new URL(`${s.url}/sessions`)
    const response = new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        },
      )
      req.on('error', reject)
      // Half the body now: the request is in flight when the signal arrives.
      req.write(body.slice(0, 10))
      const waitForShutdown = setInterval(() => {
        if (s.stdout().includes('shutting down')) {
          clearInterval(waitForShutdown)
          req.end(body.slice(10))
        }
      }, 20)
    })
    // Give the server the request's headers before signalling.
    await new Promise((r) => setTimeout(r, 200))
    s.child.kill('SIGTERM')
    expect(await response).toBe(201)
    expect(await s.exited).toBe(0)
  })

  it('cuts what is still open at SHUTDOWN_TIMEOUT_SECONDS and exits; an upload part that finished in the grace period is kept', async () => {
    const env = baseEnv(await tempDir(), {
      ADMIN_PASSWORD: 'admin-password-1',
      SHUTDOWN_TIMEOUT_SECONDS: '2',
    })
    const s = await serve(env)
    const login = await fetch(`${s.url}/sessions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
    })
    const auth = {
      'X-FilesAPI-Auth': ((await login.json()) as { id: string }).id,
      'Content-Type': 'application/json',
    }
    const put = await fetch(`${s.url}/files/kept.bin`, {
      method: 'POST',
      headers: auth,
      body: '{"action":"put"}',
    })
    const { upload_uri: uploadUri, ref } = (await put.json()) as { upload_uri: string; ref: string }
    const bytes = Buffer.alloc(256 * 1024, 7)
    /** A PUT of the part with the whole length announced: half now, the rest when told. */
    const partPut = (announced: number) => {
      const u = new URL(uploadUri)
      let finish: (rest: Buffer) => void = () => undefined
      const status = new Promise<number>((resolve, reject) => {
        const req = http.request(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname + u.search,
            method: 'PUT',
            headers: { 'Content-Length': announced },
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve(res.statusCode ?? 0))
          },
        )
        req.on('error', reject)
        req.write(bytes.subarray(0, bytes.length / 2))
        finish = (rest) => req.end(rest)
      })
      return { status, finish }
    }
    const finishing = partPut(bytes.length)
    // Another client that never sends the rest of its body: only the deadline ends it.
    const stuck = partPut(bytes.length * 4)
    const stuckEnd = stuck.status.then(
      () => 'answered',
      () => 'cut',
    )
    await new Promise((r) => setTimeout(r, 200))
    const signalled = Date.now()
    s.child.kill('SIGTERM')
    await vi.waitFor(() => expect(s.stdout()).toContain('shutting down'), { timeout: 10_000 })
    finishing.finish(bytes.subarray(bytes.length / 2))
    expect(await finishing.status).toBe(200)
    expect(await s.exited).toBe(0)
    // Cut at the 2 s deadline, not held by the stuck client (the default would wait 30 s).
    expect(Date.now() - signalled).toBeLessThan(20_000)
    expect(s.stdout()).toContain('shutdown timeout: cutting the connections still open')
    // The stuck client's connection was cut, and it ended before the database closed: nothing
    // failed for want of it, and nothing was logged as an error.
    expect(await stuckEnd).toBe('cut')
    const log = s.stdout()
    expect(log.indexOf('front ends closed')).toBeGreaterThan(log.indexOf('shutdown timeout'))
    expect(log).not.toContain('connections cut but not all closed')
    expect(log).not.toMatch(/"level":(50|60)/)

    // After the restart the upload goes on where it was: its part is there.
    const again = await serve(env)
    const relog = await fetch(`${again.url}/sessions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
    })
    const auth2 = {
      'X-FilesAPI-Auth': ((await relog.json()) as { id: string }).id,
      'Content-Type': 'application/json',
    }
    const end = await fetch(`${again.url}/files/kept.bin`, {
      method: 'POST',
      headers: auth2,
      body: JSON.stringify({ action: 'end', ref }),
    })
    expect(end.status).toBe(201)
    expect(((await end.json()) as { size: number }).size).toBe(bytes.length)
    again.child.kill('SIGTERM')
    expect(await again.exited).toBe(0)
  })
})
