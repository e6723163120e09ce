import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './helpers/s3-server.js'
import { dialects } from './helpers/server.js'
import {
  builtServer,
  freePort,
  type ProcessSite,
  processSite,
  projectRoot,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

/**
 * `wharf serve` as an operator starts it: every port is bound and the object store checked before
 * the site and its administrator are created, and HTTP answers only once every front end listens.
 */
let servers: ServerProcesses
const sites: ProcessSite[] = []
const children: ChildProcess[] = []
const blockers: net.Server[] = []

beforeAll(() => {
  servers = serverProcesses()
})

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  await Promise.all(
    children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : null)),
  )
  await servers?.killAll()
  for (const b of blockers) b.close()
  for (const s of sites) await s.remove()
})

/** `wharf serve` to its end: a start that is refused exits by itself. */
async function refusedStart(
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    await servers.wharf(['serve'], env)
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
  throw new Error('the server started')
}

/** A port something else listens on. */
async function busyPort(): Promise<number> {
  const blocker = net.createServer()
  blockers.push(blocker)
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  return (blocker.address() as net.AddressInfo).port
}

/** `wharf serve` running, with everything it printed so far; resolves once it says it listens. */
async function start(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [builtServer(), 'serve'], {
    env: { ...env, LOG_LEVEL: 'info' },
    cwd: projectRoot,
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
  await servers.step(
    'server start',
    new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', () => out.includes('Wharf is listening') && resolve())
      child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
    }),
  )
  return { child, output: () => out }
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  expect(code).toBe(0)
}

/** The first line a server sends on a new connection to `port`. */
async function greeting(port: number, connected?: (localPort: number) => void): Promise<string> {
  const socket = net.connect(port, '127.0.0.1')
  socket.once('connect', () => connected?.(socket.localPort ?? 0))
  try {
    let text = ''
    for await (const chunk of socket) {
      text += chunk
      if (text.includes('\n')) return text.split(/\r?\n/)[0]!
    }
    return text
  } finally {
    socket.destroy()
  }
}

describe.each(dialects)('starting the server (%s)', (dialect) => {
  let site: ProcessSite
  beforeAll(async () => {
    // No site yet: the first start creates it, with a generated administrator password.
    site = await processSite(servers, dialect, { ADMIN_PASSWORD: '' }, { key: false })
    sites.push(site)
  }, 60_000)

  it('refuses a port in use in one line naming its setting, creating nothing, so a later start prints the password', async () => {
    const free = String(await freePort())
    const cases: { setting: string; env: Record<string, string> }[] = [
      { setting: 'PORT', env: { SFTP_PORT: '0' } },
      { setting: 'SFTP_PORT', env: { PORT: free } },
      { setting: 'FTP_PORT', env: { PORT: free, SFTP_PORT: '0', FTP_ENABLED: 'true' } },
    ]
    for (const { setting, env } of cases) {
      const busy = await busyPort()
      const r = await refusedStart(site.env({ ...env, [setting]: String(busy), LOG_LEVEL: 'info' }))
      expect({ code: r.code, stderr: r.stderr }).toEqual({
        code: 1,
        stderr: `${setting} ${busy} on 127.0.0.1 is already in use: stop what listens there, or set ${setting} to a free port\n`,
      })
      expect(r.stdout).not.toContain('password')
    }
    expect(await site.db.db.selectFrom('users').select('id').execute()).toEqual([])
    expect(await site.db.db.selectFrom('sites').select('id').execute()).toEqual([])

    const s = await start(site.env({ PORT: free, SFTP_PORT: '0' }))
    expect(s.output()).toMatch(/created the site administrator "admin" with the password:\s+\S+/)
    await stop(s.child)
  })

  it('answers over HTTP only once SFTP and FTP listen, and serves connections made during start-up', async () => {
    const [http, sftp, ftp] = [await freePort(), await freePort(), await freePort()]
    const child = spawn(process.execPath, [builtServer(), 'serve'], {
      env: site.env({
        PORT: String(http),
        SFTP_PORT: String(sftp),
        FTP_ENABLED: 'true',
        FTP_PORT: String(ftp),
      }),
      cwd: projectRoot,
      stdio: 'ignore',
    })
    children.push(child)
    // Connections made as soon as each port takes them: they wait for their front end. What each
    // is doing is kept, so that one that never hears its greeting says how far it got.
    const state: Record<number, string> = {}
    const early = async (port: number) => {
      for (let attempt = 1; ; attempt++) {
        if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
        state[port] = `attempt ${attempt}`
        const line = await greeting(port, (local) => {
          state[port] = `attempt ${attempt}: connected from port ${local}, waiting for the greeting`
        }).catch(() => null)
        if (line !== null) return line
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
    }
    const earlyGreetings = Promise.all([early(sftp), early(ftp)])
    // The first HTTP answer, asked for as fast as the loop allows.
    const answered = async () => {
      for (;;) {
        if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
        const r = await fetch(`http://127.0.0.1:${http}/api/rest/v1/api_key`).catch(() => null)
        if (r) return r.status
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    expect(await servers.step('first HTTP answer', answered())).toBe(401)
    const [ssh, ftpGreeting] = await Promise.all([greeting(sftp), greeting(ftp)])
    expect(ssh).toMatch(/^SSH-2\.0-Wharf/)
    expect(ftpGreeting).toMatch(/^220 /)
    const [earlySsh, earlyFtp] = await servers.step('early greetings', earlyGreetings).catch((err: Error) => {
      throw new Error(`${err.message}\nSFTP ${sftp}: ${state[sftp]}; FTP ${ftp}: ${state[ftp]}`)
    })
    expect(earlySsh).toMatch(/^SSH-2\.0-Wharf/)
    expect(earlyFtp).toMatch(/^220 /)
    await stop(child)
  })
})

describe('starting with an S3 store (sqlite)', () => {
  let full: S3TestServer
  let stock: S3TestServer
  beforeAll(async () => {
    ;[full, stock] = await Promise.all([startS3Server(), startS3Server({ stock: true })])
  })
  afterAll(async () => {
    await full?.close()
    await stock?.close()
  })

  const s3Env = async (s3: S3TestServer, site: ProcessSite, bucket: string) =>
    site.env({
      PORT: String(await freePort()),
      SFTP_PORT: '0',
      BLOB_STORE: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_PREFIX: 'files/',
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    })

  it('refuses an object store without ListParts in one line, before it creates the site', async () => {
    const site = await processSite(servers, 'sqlite', { ADMIN_PASSWORD: '' }, { key: false })
    sites.push(site)
    const bucket = await stock.bucket()
    const r = await refusedStart(await s3Env(stock, site, bucket))
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(
      `BLOB_STORE=s3: ListParts failed in bucket "${bucket}" at ${stock.endpoint} (region us-east-1) (405 MethodNotAllowed); Wharf needs it to finish an upload\n`,
    )
    expect(r.stdout).not.toContain('password')
    expect(await site.db.db.selectFrom('users').select('id').execute()).toEqual([])
  })

  it('starts on an object store that has what the store needs, and leaves nothing in the bucket', async () => {
    const site = await processSite(servers, 'sqlite', {}, { key: false })
    sites.push(site)
    const bucket = await full.bucket()
    const s = await start(await s3Env(full, site, bucket))
    expect(await full.keys(bucket)).toEqual([])
    await stop(s.child)
  })
})
