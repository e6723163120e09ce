import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import ssh2 from 'ssh2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { remains } from './helpers/abandoned-uploads.js'
import { req } from './helpers/files.js'
import { dialects } from './helpers/server.js'
import {
  freePort,
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'
import { sftpBatch } from './helpers/sftp.js'

/**
 * Wharf as `npm start` runs it, SIGKILLed while an SFTP client is in the middle of a file, after
 * another file was committed: after a restart on the same data the committed file is whole, the
 * half-sent one is nowhere, and the janitor clears what the dead process left of its upload.
 */
const ADMIN_PASSWORD = 'admin-password-1'
const HOUR = 3600_000

let servers: ServerProcesses
const sites: ProcessSite[] = []
let dir: string

beforeAll(async () => {
  servers = serverProcesses()
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-sftp-crash-'))
}, 120_000)

afterAll(async () => {
  await servers?.killAll()
  for (const s of sites) await s.remove()
  if (dir) await fs.rm(dir, { recursive: true, force: true })
})

const md5 = (data: Buffer) => crypto.createHash('md5').update(data).digest('hex')

/** An ssh2 SFTP session as the site administrator. */
async function connect(port: number) {
  const client = new ssh2.Client()
  client.on('error', () => undefined)
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.connect({
      host: '127.0.0.1',
      port,
      username: 'admin',
      password: ADMIN_PASSWORD,
      readyTimeout: 10_000,
    })
  })
  const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) =>
    client.sftp((err, s) => (err ? reject(err) : resolve(s))),
  )
  return { client, sftp }
}

describe.each(dialects)('an SFTP upload across a killed server process (%s)', (dialect) => {
  it('keeps the committed file whole, shows nothing of the half-sent one and cleans up after it', async () => {
    const { step } = servers
    const site = await processSite(servers, dialect, {
      SFTP_HOST: '127.0.0.1',
      PROTOCOL_UPLOAD_EXPIRY_SECONDS: '5',
      JANITOR_INTERVAL_SECONDS: '1',
    })
    sites.push(site)
    const db = site.db.db
    const storage = path.join(site.dataDir, 'storage')
    const firstPort = await freePort()
    const first = await servers.serve(site.env({ SFTP_PORT: String(firstPort) }))

    const kept = crypto.randomBytes(3 * 1024 * 1024 + 17)
    const keptFile = path.join(dir, `kept-${dialect}.bin`)
    await fs.writeFile(keptFile, kept)
    const put = await step(
      'sftp put',
      sftpBatch(firstPort, 'admin', ADMIN_PASSWORD, [`put ${keptFile} /kept.bin`]),
    )
    expect(put.code, put.stderr).toBe(0)

    // The second file: opened, a megabyte sent, never closed.
    const { client, sftp } = await step('ssh2 login', connect(firstPort))
    const handle = await new Promise<Buffer>((resolve, reject) =>
      sftp.open('/partial.bin', 'w', (err, h) => (err ? reject(err) : resolve(h))),
    )
    const chunk = crypto.randomBytes(32 * 1024)
    for (let offset = 0; offset < 1024 * 1024; offset += chunk.length) {
      await new Promise<void>((resolve, reject) =>
        sftp.write(handle, chunk, 0, chunk.length, offset, (err) => (err ? reject(err) : resolve())),
      )
    }
    const upload = await db
      .selectFrom('uploads')
      .select(['id', 'ref'])
      .where('path', '=', 'partial.bin')
      .executeTakeFirstOrThrow()
    // Its bytes are on their way to disk, in the temporary file of its first part.
    await step(
      'the part arriving on disk',
      expect
        .poll(async () => (await remains(db, storage, upload)).temporary.length, { timeout: 20_000 })
        .toBe(1),
    )

    first.child.kill('SIGKILL')
    await step('the server exiting on SIGKILL', first.exited)
    client.destroy()
    // A crash discards nothing: the upload is still recorded, its part still a temporary file.
    expect(await remains(db, storage, upload)).toMatchObject({
      record: true,
      temporary: [expect.any(String)],
    })

    const port = await freePort()
    const second = await servers.serve(site.env({ SFTP_PORT: String(port) }))
    const back = path.join(dir, `back-${dialect}.bin`)
    const get = await step(
      'sftp get and ls',
      sftpBatch(port, 'admin', ADMIN_PASSWORD, [`get /kept.bin ${back}`, 'ls -1 /']),
    )
    expect(get.code, get.stderr).toBe(0)
    expect(md5(await fs.readFile(back))).toBe(md5(kept))
    expect(get.stdout.split('\n').filter((l) => !l.startsWith('sftp>') && l.trim() !== '')).toEqual([
      '/kept.bin',
    ])
    const t = { api: second.api, key: site.key }
    expect((await req(t, 'GET', '/files/partial.bin')).status).toBe(404)
    expect((await req(t, 'GET', '/files/kept.bin')).status).toBe(200)

    // The janitor ends the upload once its short lifetime has run out with nobody renewing it.
    await step(
      'the janitor removing the upload',
      expect
        .poll(
          async () => {
            const left = await remains(db, storage, upload)
            return { record: left.record, partRecords: left.partRecords, stagedParts: left.stagedParts }
          },
          { timeout: 20_000 },
        )
        .toEqual({ record: false, partRecords: 0, stagedParts: [] }),
    )
    // The part's temporary file goes with the temporary files untouched for an hour: aged here.
    const [tmp] = (await remains(db, storage, upload)).temporary
    const old = new Date(Date.now() - 2 * HOUR)
    await fs.utimes(path.join(storage, 'tmp', tmp!), old, old)
    await step(
      'the janitor removing the temporary file',
      expect
        .poll(async () => (await remains(db, storage, upload)).temporary, { timeout: 20_000 })
        .toEqual([]),
    )
    expect((await req(t, 'GET', '/folders')).body.map((e: { path: string }) => e.path)).toEqual(['kept.bin'])
  }, 120_000)
})
