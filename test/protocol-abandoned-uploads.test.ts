import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NOTHING_LEFT, remains, stagedUpload, startClient } from './helpers/abandoned-uploads.js'
import { startFtpFront } from './helpers/ftp.js'
import { call, dialects, grant, makeUser, type TestUser, useStarted } from './helpers/server.js'
import { sshOptions, useSftpServer } from './helpers/sftp.js'

/** Small writer parts, so that an upload cut off has parts staged as well as one arriving. */
const PART = 64 * 1024

/**
 * A client killed in the middle of an upload (`kill -9`: its connections close at once, nothing
 * more is said) over SFTP, FTP and WebDAV: the upload is discarded as soon as the server sees the
 * connection go, its record, its parts' records and its staged bytes, and no file appears. The
 * test servers run no janitor, and the uploads would otherwise live for minutes: only the
 * discard can empty them.
 */
describe.each(dialects)('uploads abandoned by a killed client (%s)', (dialect) => {
  const s = useSftpServer(
    dialect,
    { FTP_ENABLED: 'true', FTP_HOST: '127.0.0.1', FTP_PORT: '0' },
    { writerPartBytes: PART },
  )
  // The FTP front end on the same site.
  const ftp = useStarted(`${dialect} FTP front end`, () => startFtpFront(s))
  let alice: TestUser
  let dir: string
  let source: string
  const storage = () => path.join(s.container.config.dataDir, 'storage')

  beforeAll(async () => {
    alice = await makeUser(s, { username: 'alice' })
    expect((await call(s, 'POST', '/folders/inbox', { key: s.adminKey, body: {} })).status).toBe(201)
    await grant(s, alice.id, 'inbox', 'full')
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-abandoned-'))
    source = path.join(dir, 'big.bin')
    // 8 MiB at 500 KB/s: the client is still sending long after the first parts are staged.
    await fs.writeFile(source, crypto.randomBytes(8 * 1024 * 1024))
  })
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  /** Starts `client`, kills it once two parts of `file` are staged, and checks what is left. */
  async function killedMidUpload(file: string, client: ReturnType<typeof startClient>) {
    try {
      const upload = await stagedUpload(s.container.db, file, 2)
      const before = await remains(s.container.db, storage(), upload)
      expect(before.record, client.stderr()).toBe(true)
      expect(before.stagedParts.length).toBeGreaterThanOrEqual(2)
      expect(client.running(), client.stderr()).toBe(true)
      await client.kill()
      await expect
        .poll(() => remains(s.container.db, storage(), upload), { timeout: 15_000 })
        .toEqual(NOTHING_LEFT)
    } finally {
      await client.kill()
    }
    expect((await call(s, 'GET', `/files/${file}`, { key: s.adminKey })).status).toBe(404)
    expect((await call(s, 'GET', '/folders/inbox', { key: s.adminKey })).body).toEqual([])
  }

  it('SFTP: OpenSSH’s sftp killed mid-put', async () => {
    const sftp = startClient(
      'sshpass',
      [
        '-e',
        'sftp',
        ...sshOptions(s.sftp.port),
        '-o',
        'PubkeyAuthentication=no',
        '-o',
        'PreferredAuthentications=password',
        '-o',
        'BatchMode=no',
        // Kbit/s: about 500 KB/s.
        '-l',
        '4000',
        '-b',
        '-',
        'alice@127.0.0.1',
      ],
      { input: `put ${source} /inbox/killed-sftp.bin\n`, env: { SSHPASS: alice.password } },
    )
    await killedMidUpload('inbox/killed-sftp.bin', sftp)
  })

  it('FTP: curl killed mid-STOR', async () => {
    const curl = startClient('curl', [
      '-sS',
      '--limit-rate',
      '500k',
      '-u',
      `alice:${alice.password}`,
      '-T',
      source,
      `ftp://127.0.0.1:${ftp.address().port}/inbox/killed-ftp.bin`,
    ])
    await killedMidUpload('inbox/killed-ftp.bin', curl)
  })

  it('WebDAV: curl killed mid-PUT', async () => {
    const curl = startClient('curl', [
      '-sS',
      '--limit-rate',
      '500k',
      '-u',
      `alice:${alice.password}`,
      '-T',
      source,
      `${s.url}/dav/inbox/killed-dav.bin`,
    ])
    await killedMidUpload('inbox/killed-dav.bin', curl)
  })
})
