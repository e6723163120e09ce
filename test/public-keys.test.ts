import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

/** A fresh key pair made by OpenSSH's ssh-keygen; returns the .pub line and its SHA-256 fingerprint. */
function sshKey(dir: string, name: string, type = 'ed25519'): { pub: string; sha256: string; md5: string } {
  const file = path.join(dir, name)
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', `${name}@test`, '-f', file])
  const pub = fs.readFileSync(`${file}.pub`, 'utf8').trim()
  const finger = (hash: string) =>
    execFileSync('ssh-keygen', ['-l', '-E', hash, '-f', `${file}.pub`], { encoding: 'utf8' }).split(' ')[1]!
  return { pub, sha256: finger('sha256').replace(/^SHA256:/, ''), md5: finger('md5').replace(/^MD5:/, '') }
}

describe.each(dialects)('PublicKey API (%s)', (dialect) => {
  let dir: string
  let alice: TestUser
  let bob: TestUser
  let aliceSession: string
  let bobKey: string

  const s = useServer(dialect)
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-keys-'))
    alice = await makeUser(s, { username: 'alice' })
    bob = await makeUser(s, { username: 'bob' })
    aliceSession = await login(s, 'alice', alice.password)
    bobKey = (await makeKey(s, bob.id)).key
  })
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('adds, lists, shows, renames and deletes a user’s own key, with OpenSSH’s fingerprints', async () => {
    const k = sshKey(dir, 'alice1')
    const created = await call(s, 'POST', '/public_keys', {
      session: aliceSession,
      body: { title: 'laptop', public_key: k.pub },
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toEqual({
      id: expect.any(Number),
      title: 'laptop',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      fingerprint: k.md5,
      fingerprint_sha256: k.sha256,
      last_login_at: null,
      username: 'alice',
      user_id: alice.id,
      // Stored without its comment.
      public_key: k.pub.split(' ').slice(0, 2).join(' '),
    })
    const id = created.body.id as number
    const list = await call(s, 'GET', '/public_keys', { session: aliceSession })
    expect(list.status).toBe(200)
    expect(list.body.map((x: { id: number }) => x.id)).toEqual([id])
    const shown = await call(s, 'GET', `/public_keys/${id}`, { session: aliceSession })
    expect(shown.body.title).toBe('laptop')
    const renamed = await call(s, 'PATCH', `/public_keys/${id}`, {
      session: aliceSession,
      body: { title: 'desk' },
    })
    expect(renamed.status).toBe(200)
    expect(renamed.body.title).toBe('desk')
    // What the SDK's save() sends back: the record as shown passes, a changed read-only field does not.
    const echoed = await call(s, 'PATCH', `/public_keys/${id}`, {
      session: aliceSession,
      body: { ...renamed.body, title: 'desk 2' },
    })
    expect(echoed.status, echoed.text).toBe(200)
    expectError(
      await call(s, 'PATCH', `/public_keys/${id}`, {
        session: aliceSession,
        body: { title: 'x', user_id: alice.id + 1 },
      }),
      400,
      'bad-request/request-params-invalid',
    )
    const deleted = await call(s, 'DELETE', `/public_keys/${id}`, { session: aliceSession })
    expect(deleted.status).toBe(204)
    expectError(await call(s, 'GET', `/public_keys/${id}`, { session: aliceSession }), 404, 'not-found')
  })

  it('lets a site admin manage any user’s keys, and list everyone’s', async () => {
    const k = sshKey(dir, 'bob-by-admin', 'rsa')
    const created = await call(s, 'POST', '/public_keys', {
      key: s.adminKey,
      body: { title: 'bob’s', public_key: k.pub, user_id: bob.id },
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({ user_id: bob.id, username: 'bob', fingerprint_sha256: k.sha256 })
    const all = await call(s, 'GET', '/public_keys', { key: s.adminKey })
    expect(all.body.map((x: { username: string }) => x.username)).toContain('bob')
    const bobs = await call(s, 'GET', `/public_keys?user_id=${bob.id}`, { key: s.adminKey })
    expect(bobs.body.every((x: { user_id: number }) => x.user_id === bob.id)).toBe(true)
    expect((await call(s, 'DELETE', `/public_keys/${created.body.id}`, { key: s.adminKey })).status).toBe(204)
  })

  it('refuses other users’ keys to a user who is not a site admin', async () => {
    const k = sshKey(dir, 'bob2')
    const bobs = await call(s, 'POST', '/public_keys', {
      key: bobKey,
      body: { title: 'b', public_key: k.pub },
    })
    expect(bobs.status).toBe(201)
    const id = bobs.body.id as number
    expectError(
      await call(s, 'GET', `/public_keys/${id}`, { session: aliceSession }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'PATCH', `/public_keys/${id}`, { session: aliceSession, body: { title: 'x' } }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'DELETE', `/public_keys/${id}`, { session: aliceSession }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'GET', `/public_keys?user_id=${bob.id}`, { session: aliceSession }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
    expectError(
      await call(s, 'POST', '/public_keys', {
        session: aliceSession,
        body: { title: 'x', public_key: sshKey(dir, 'alice-for-bob').pub, user_id: bob.id },
      }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
    // Alice's own list does not show Bob's key.
    const mine = await call(s, 'GET', '/public_keys', { session: aliceSession })
    expect(mine.body.some((x: { id: number }) => x.id === id)).toBe(false)
  })

  it('refuses callers without credentials, keys limited to file operations, and site-wide keys without a user', async () => {
    expectError(await call(s, 'GET', '/public_keys'), 401, 'not-authenticated/authentication-required')
    const desktop = await makeKey(s, alice.id, { permission_set: 'desktop_app' })
    expectError(
      await call(s, 'GET', '/public_keys', { key: desktop.key }),
      403,
      'not-authorized/api-key-only-for-desktop-app',
    )
    expectError(
      await call(s, 'POST', '/public_keys', {
        key: s.adminKey,
        body: { title: 'x', public_key: sshKey(dir, 'nouser').pub },
      }),
      400,
      'bad-request/user-required',
    )
  })

  it('answers bad input with typed errors', async () => {
    const post = (body: unknown) => call(s, 'POST', '/public_keys', { session: aliceSession, body })
    const good = sshKey(dir, 'good').pub
    expectError(await post({ public_key: good }), 400, 'bad-request/request-params-required')
    expectError(await post({ title: 'x' }), 400, 'bad-request/request-params-required')
    expectError(await post({ title: 12, public_key: good }), 400, 'bad-request/request-params-invalid')
    expectError(
      await post({ title: 'x', public_key: good, color: 'red' }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await post({ title: 'x'.repeat(256), public_key: good }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await post({ title: 'x', public_key: 'ssh-ed25519 not-base64!' }),
      422,
      'processing-failure/model-save-error',
    )
    const priv = fs.readFileSync(path.join(dir, 'good'), 'utf8')
    expectError(await post({ title: 'x', public_key: priv }), 422, 'processing-failure/model-save-error')
    expectError(await post({ title: '   ', public_key: good }), 422, 'processing-failure/model-save-error')
    for (const title of ['a\u202Eb', 'a\u2069b', 'a\nb', 'a\u0000b', 'a\u009fb']) {
      expectError(
        await post({ title, public_key: good }),
        400,
        'bad-request/request-params-contain-invalid-character',
      )
    }
    expect((await post({ title: 'first', public_key: good })).status).toBe(201)
    const again = await call(s, 'POST', '/public_keys', {
      key: bobKey,
      body: { title: 'same', public_key: good },
    })
    expectError(again, 422, 'processing-failure/model-save-error')
    expect(again.body.model_errors).toHaveProperty('public_key')
    expectError(
      await call(s, 'GET', '/public_keys/abc', { session: aliceSession }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(await call(s, 'GET', '/public_keys/999999', { session: aliceSession }), 404, 'not-found')
    expectError(
      await call(s, 'POST', '/public_keys', {
        session: aliceSession,
        raw: '{"title":',
        contentType: 'application/json',
      }),
      400,
      'bad-request/invalid-body',
    )
  })

  it('deletes a user’s keys with the user', async () => {
    const carol = await makeUser(s, { username: 'carol' })
    const r = await call(s, 'POST', '/public_keys', {
      key: s.adminKey,
      body: { title: 'c', public_key: sshKey(dir, 'carol').pub, user_id: carol.id },
    })
    expect(r.status).toBe(201)
    await s.container.db.deleteFrom('users').where('id', '=', carol.id).execute()
    expectError(await call(s, 'GET', `/public_keys/${r.body.id}`, { key: s.adminKey }), 404, 'not-found')
  })
})
