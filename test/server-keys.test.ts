import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadFtpTls } from '../src/ftp/ftp-tls.js'
import { HostKeys } from '../src/modules/ssh/host-keys.js'
import { dialects, useServer } from './helpers/server.js'

const HOST_KEY_FILES = ['ssh_host_ed25519_key', 'ssh_host_rsa_key']

/**
 * The server's own keys as several nodes on one database see them: each node has its own
 * DATA_DIR, and all of them must present the keys stored once in the database.
 */
describe.each(dialects)('server keys shared through the database (%s)', (dialect) => {
  let scratch: string

  const s = useServer(dialect)
  beforeAll(async () => {
    scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-keys-'))
  })
  afterAll(async () => {
    if (scratch) await fs.rm(scratch, { recursive: true, force: true })
  })

  const node = (name: string) => path.join(scratch, name)
  const fingerprints = async (dir: string) =>
    (await new HostKeys(dir, [], s.container.serverKeys).all()).map((k) => k.fingerprintSha256)
  const stored = async (name: string) => {
    const row = await s.container.db
      .selectFrom('server_keys')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirst()
    return row ? (JSON.parse(row.value) as Record<string, string>) : null
  }
  const forget = () => s.container.db.deleteFrom('server_keys').execute()
  const files = (dir: string) =>
    Promise.all(HOST_KEY_FILES.map((f) => fs.readFile(path.join(dir, f), 'utf8')))

  it('imports the SFTP host keys a server already has under DATA_DIR, unchanged', async () => {
    // A server that ran alone: its keys are on its disk, the database has none.
    const alone = (await s.container.hostKeys.all()).map((k) => k.fingerprintSha256)
    await forget()
    const dir = node('upgraded')
    await fs.cp(path.join(s.container.config.dataDir, 'sftp'), dir, { recursive: true })
    const before = await files(dir)

    expect(await fingerprints(dir)).toEqual(alone)
    expect(await files(dir)).toEqual(before)
    expect(await stored('sftp-host-keys')).toEqual({
      ssh_host_ed25519_key: before[0],
      ssh_host_rsa_key: before[1],
    })
  })

  it('gives nodes that start at once one set, and replaces a joining node’s own keys', async () => {
    await forget()
    const [a, b] = await Promise.all([fingerprints(node('a')), fingerprints(node('b'))])
    expect(a).toHaveLength(2)
    expect(b).toEqual(a)
    const set = await stored('sftp-host-keys')
    expect(await files(node('a'))).toEqual([set!.ssh_host_ed25519_key, set!.ssh_host_rsa_key])
    expect(await files(node('b'))).toEqual(await files(node('a')))
    for (const f of HOST_KEY_FILES) expect((await fs.stat(path.join(node('b'), f))).mode & 0o777).toBe(0o600)

    // A node that had keys of its own before it joined: it presents the site's, and keeps its
    // old files beside them.
    const own = await files(node('upgraded'))
    expect(await fingerprints(node('upgraded'))).toEqual(a)
    expect(await files(node('upgraded'))).toEqual(await files(node('a')))
    expect(
      await Promise.all(
        HOST_KEY_FILES.map((f) => fs.readFile(path.join(node('upgraded'), `${f}.replaced`), 'utf8')),
      ),
    ).toEqual(own)
  })

  it('stores nothing from a node whose own key files do not load', async () => {
    await forget()
    const dir = node('broken')
    await fs.mkdir(dir, { recursive: true })
    await fs.writeFile(path.join(dir, 'ssh_host_rsa_key'), 'not a key\n')
    await expect(fingerprints(dir)).rejects.toThrow(
      /ssh_host_rsa_key does not hold an unencrypted SSH private key/,
    )
    expect(await stored('sftp-host-keys')).toBeNull()

    await fs.writeFile(path.join(dir, 'tls-cert.pem'), 'not a certificate\n')
    await fs.writeFile(path.join(dir, 'tls-key.pem'), 'not a key\n')
    await expect(
      loadFtpTls({ ...s.container.config.ftp, tls: null, tlsDir: dir }, s.container.serverKeys),
    ).rejects.toThrow(/are not a PEM certificate and its private key/)
    expect(await stored('ftp-tls')).toBeNull()
  })

  it('gives every node the same generated FTP certificate, importing one already on disk', async () => {
    const ftp = (dir: string) =>
      loadFtpTls({ ...s.container.config.ftp, tls: null, tlsDir: dir }, s.container.serverKeys)
    const [a, b] = await Promise.all([ftp(node('ftp-a')), ftp(node('ftp-b'))])
    expect(a.source).toBe('generated')
    expect(b.fingerprint).toBe(a.fingerprint)
    const set = await stored('ftp-tls')
    expect(await fs.readFile(path.join(node('ftp-b'), 'tls-cert.pem'), 'utf8')).toBe(set!['tls-cert.pem'])
    expect((await fs.stat(path.join(node('ftp-b'), 'tls-key.pem'))).mode & 0o777).toBe(0o600)

    // A server that ran alone keeps its certificate when the database has none yet.
    await forget()
    const alone = await loadFtpTls({ ...s.container.config.ftp, tls: null, tlsDir: node('ftp-alone') })
    expect(alone.fingerprint).not.toBe(a.fingerprint)
    expect((await ftp(node('ftp-alone'))).fingerprint).toBe(alone.fingerprint)
    expect((await ftp(node('ftp-c'))).fingerprint).toBe(alone.fingerprint)
  })
})
