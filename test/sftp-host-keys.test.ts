import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { HostKeys } from '../src/modules/ssh/host-keys.js'
import { call, dialects, expectError, login, makeUser, useServer } from './helpers/server.js'

/** What OpenSSH's ssh-keygen says a private key file's fingerprint is (SHA256:… without the prefix). */
function opensshFingerprint(file: string, hash: 'sha256' | 'md5'): string {
  const pub = execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' })
  const line = execFileSync('ssh-keygen', ['-l', '-E', hash, '-f', '-'], { input: pub, encoding: 'utf8' })
  return line.split(' ')[1]!.replace(/^(SHA256|MD5):/, '')
}

describe.each(dialects)('SFTP host keys (%s)', (dialect) => {
  const s = useServer(dialect)

  it('generates an ed25519 and an RSA key once, and shows their fingerprints to site admins', async () => {
    const r = await call(s, 'GET', '/sftp_host_keys', { key: s.adminKey })
    expect(r.status, r.text).toBe(200)
    expect(r.body.map((k: { id: number; name: string }) => [k.id, k.name])).toEqual([
      [1, 'ssh-ed25519'],
      [2, 'ssh-rsa'],
    ])
    const dir = path.join(s.container.config.dataDir, 'sftp')
    const files = ['ssh_host_ed25519_key', 'ssh_host_rsa_key'].map((f) => path.join(dir, f))
    for (const [i, file] of files.entries()) {
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      expect(r.body[i]).toMatchObject({
        fingerprint_sha256: opensshFingerprint(file, 'sha256'),
        fingerprint_md5: opensshFingerprint(file, 'md5'),
      })
    }
    const one = await call(s, 'GET', '/sftp_host_keys/2', { key: s.adminKey })
    expect(one.body).toEqual(r.body[1])
    expect(Object.keys(one.body).sort()).toEqual(['fingerprint_md5', 'fingerprint_sha256', 'id', 'name'])

    // What a restart does: the keys are read from DATA_DIR again, not made anew.
    const before = files.map((f) => fs.readFileSync(f, 'utf8'))
    const again = await new HostKeys(dir).all()
    expect(again.map((k) => k.fingerprintSha256)).toEqual(
      r.body.map((k: { fingerprint_sha256: string }) => k.fingerprint_sha256),
    )
    expect(files.map((f) => fs.readFileSync(f, 'utf8'))).toEqual(before)
  })

  it('refuses users who are not site admins, and unknown ids', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    expectError(
      await call(s, 'GET', '/sftp_host_keys', { session }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'GET', '/sftp_host_keys/1', { session }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(await call(s, 'GET', '/sftp_host_keys/3', { key: s.adminKey }), 404, 'not-found')
    expectError(await call(s, 'GET', '/sftp_host_keys'), 401, 'not-authenticated/authentication-required')
  })
})
