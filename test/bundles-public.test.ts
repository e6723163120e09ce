import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { putBytes } from './helpers/files.js'
import { startListener } from './helpers/listener.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'

const PAST = '2000-01-01T00:00:00Z'
const FUTURE = '2099-01-01T00:00:00Z'

describe.each(dialects)('Share links, the recipients’ side (%s)', (dialect) => {
  // The webhook listener is on loopback, which only this range allows.
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', LOGIN_DEFENDER_THRESHOLD: '3' })
  let n = 0

  /** A share link by a user with full permission on /pub, and that user's key. */
  async function share(body: Record<string, unknown>) {
    n++
    const user = await makeUser(s, { username: `owner${n}` })
    await call(s, 'PATCH', `/users/${user.id}`, { key: s.adminKey, body: { attachments_permission: true } })
    await makeFolder(s, `pub${n}/docs/sub`)
    await makeFile(s, `pub${n}/docs/a.txt`, 'hello share')
    await makeFile(s, `pub${n}/docs/sub/b.txt`, 'bee')
    await makeFolder(s, `pub${n}/inbox`)
    await grant(s, user.id, `pub${n}`, 'full')
    const key = (await makeKey(s, user.id)).key
    const created = await call(s, 'POST', '/bundles', {
      key,
      body: { paths: [`pub${n}/docs`, `pub${n}/inbox`], ...body },
    })
    expect(created.status).toBe(201)
    return { code: created.body.code as string, id: created.body.id as number, user, key, root: `pub${n}` }
  }
  const pub = (code: string, rest = '') => `/public/bundles/${code}${rest}`
  async function register(code: string, body: Record<string, unknown> = {}) {
    const r = await call(s, 'POST', pub(code, '/registrations'), { body })
    expect(r.status).toBe(201)
    return r.body.code as string
  }
  /** A response's status and JSON body, as expectError reads them. */
  async function jsonOf(url: string) {
    const res = await fetch(url)
    return { headers: res.headers, text: '', body: await res.json() }
  }
  const as = (reg: string) => ({ headers: { 'X-Bundle-Registration-Code': reg } })

  it('shows a link, registers a visitor, lists, downloads with a range and records it all', async () => {
    const b = await share({ description: 'For you', permissions: 'read' })
    const shown = await call(s, 'GET', pub(b.code))
    expect(shown.status).toBe(200)
    expect(shown.body).toMatchObject({ description: 'For you', password_protected: false, can_upload: false })
    expect(shown.body.paths).toEqual(['docs', 'inbox'])

    const reg = await call(s, 'POST', pub(b.code, '/registrations'), { body: { name: 'Vera' } })
    expect(reg.status).toBe(201)
    expect(reg.body).toMatchObject({ name: 'Vera', bundle_code: b.code, bundle_id: b.id })
    const code = reg.body.code as string

    const roots = await call(s, 'GET', pub(b.code, '/folders'), as(code))
    expect(roots.status).toBe(200)
    expect(roots.body.map((f: any) => f.path)).toEqual(['docs', 'inbox'])
    const docs = await call(s, 'GET', pub(b.code, '/folders/docs'), as(code))
    expect(docs.body.map((f: any) => f.path).sort()).toEqual(['docs/a.txt', 'docs/sub'])

    const first = await call(s, 'GET', pub(b.code, '/folders/docs?per_page=1'), as(code))
    expect(first.body.map((f: any) => f.path)).toEqual(['docs/a.txt'])
    const cursor = first.headers.get('x-files-cursor-next')
    expect(cursor).toBeTruthy()
    const second = await call(s, 'GET', pub(b.code, `/folders/docs?per_page=1&cursor=${cursor}`), as(code))
    expect(second.body.map((f: any) => f.path)).toEqual(['docs/sub'])

    const file = await call(s, 'GET', pub(b.code, '/files/docs/a.txt'), as(code))
    expect(file.status).toBe(200)
    expect(file.body.path).toBe('docs/a.txt')
    const whole = await fetch(file.body.download_uri)
    expect(await whole.text()).toBe('hello share')
    const part = await fetch(file.body.download_uri, { headers: { Range: 'bytes=6-' } })
    expect(part.status).toBe(206)
    expect(await part.text()).toBe('share')

    const downloads = await call(s, 'GET', `/bundle_downloads?bundle_id=${b.id}`, { key: b.key })
    expect(downloads.status).toBe(200)
    expect(downloads.body).toHaveLength(1)
    expect(downloads.body[0]).toMatchObject({ download_method: 'file', path: 'docs/a.txt' })
    expect(downloads.body[0].bundle_registration).toMatchObject({ name: 'Vera', code: null })
    const regs = await call(s, 'GET', '/bundle_registrations', { key: b.key })
    expect(regs.body.map((r: any) => r.name)).toEqual(['Vera'])

    const history = await call(s, 'GET', `/history/files/${b.root}/docs/a.txt`, { key: s.adminKey })
    const read = history.body.find((a: any) => a.action === 'read')
    expect(read).toMatchObject({ interface: 'web', username: b.user.username })
    expect(read.display).toContain(b.code)
    expect(read.display).toContain('Vera')
  })

  it('refuses unknown, expired, not yet started and deleted links alike', async () => {
    expectError(await call(s, 'GET', pub('no-such-code')), 422, 'processing-failure/invalid-bundle-code')
    const later = await share({ start_access_on_date: FUTURE })
    expectError(await call(s, 'GET', pub(later.code)), 422, 'processing-failure/invalid-bundle-code')
    const gone = await share({})
    const reg = await register(gone.code)
    await s.container.db
      .updateTable('bundles')
      .set({ expires_at: Date.parse(PAST) })
      .where('id', '=', gone.id)
      .execute()
    expectError(await call(s, 'GET', pub(gone.code)), 422, 'processing-failure/invalid-bundle-code')
    expectError(
      await call(s, 'GET', pub(gone.code, '/folders'), as(reg)),
      422,
      'processing-failure/invalid-bundle-code',
    )
    const orphan = await share({})
    expect((await call(s, 'DELETE', `/users/${orphan.user.id}`, { key: s.adminKey })).status).toBe(204)
    expectError(await call(s, 'GET', pub(orphan.code)), 422, 'processing-failure/invalid-bundle-code')
    const deleted = await share({})
    expect((await call(s, 'DELETE', `/bundles/${deleted.id}`, { key: deleted.key })).status).toBe(204)
    expectError(await call(s, 'GET', pub(deleted.code)), 422, 'processing-failure/invalid-bundle-code')
  })

  it('rests a disabled creator’s links, visits already made included, until the creator is enabled again', async () => {
    const b = await share({ permissions: 'read' })
    const reg = await register(b.code)
    const file = await call(s, 'GET', pub(b.code, '/files/docs/a.txt'), as(reg))
    expect(file.status).toBe(200)
    const disable = async (disabled: boolean) =>
      expect(
        (await call(s, 'PATCH', `/users/${b.user.id}`, { key: s.adminKey, body: { disabled } })).status,
      ).toBe(200)
    await disable(true)
    expectError(await call(s, 'GET', pub(b.code)), 422, 'processing-failure/invalid-bundle-code')
    expectError(
      await call(s, 'POST', pub(b.code, '/registrations'), { body: {} }),
      422,
      'processing-failure/invalid-bundle-code',
    )
    expectError(
      await call(s, 'GET', pub(b.code, '/folders/docs'), as(reg)),
      422,
      'processing-failure/invalid-bundle-code',
    )
    expect((await fetch(file.body.download_uri)).status).toBe(422)
    await disable(false)
    expect((await call(s, 'GET', pub(b.code, '/folders/docs'), as(reg))).status).toBe(200)
    expect(await (await fetch(file.body.download_uri)).text()).toBe('hello share')
  })

  it('asks for the password, counts wrong ones, and needs a registration code of its own link', async () => {
    const b = await share({ password: 'open sesame', require_registration: true, skip_company: true })
    const shown = await call(s, 'GET', pub(b.code))
    expect(shown.body.password_protected).toBe(true)
    expect(shown.body.paths).toBeUndefined()
    expectError(
      await call(s, 'POST', pub(b.code, '/registrations'), {
        body: { password: 'wrong', name: 'x', email: 'x@y' },
      }),
      401,
      'not-authenticated/invalid-credentials',
    )
    const failures = await s.container.db.selectFrom('login_failures').select('address').execute()
    expect(failures.map((f) => f.address)).toContain(`bundle:${b.id}`)
    expectError(
      await call(s, 'POST', pub(b.code, '/registrations'), { body: { password: 'open sesame' } }),
      400,
      'bad-request/request-params-required',
    )
    const reg = await register(b.code, { password: 'open sesame', name: 'Ann', email: 'ann@example.com' })
    expectError(
      await call(s, 'GET', pub(b.code, '/folders')),
      401,
      'not-authenticated/bundle-registration-code-failed',
    )
    expectError(
      await call(s, 'GET', pub(b.code, '/folders'), as('wrong')),
      401,
      'not-authenticated/bundle-registration-code-failed',
    )
    const other = await share({})
    expectError(
      await call(s, 'GET', pub(other.code, '/folders'), as(reg)),
      401,
      'not-authenticated/bundle-registration-code-failed',
    )
  })

  it('counts registrations against max_uses', async () => {
    const b = await share({ max_uses: 1 })
    const reg = await register(b.code)
    expectError(
      await call(s, 'POST', pub(b.code, '/registrations'), { body: {} }),
      403,
      'not-authorized/bundle-maximum-uses-reached',
    )
    expectError(await call(s, 'GET', pub(b.code)), 403, 'not-authorized/bundle-maximum-uses-reached')
    expect((await call(s, 'GET', pub(b.code, '/folders'), as(reg))).status).toBe(200)
  })

  it('refuses paths outside the share and paths the creator can no longer read', async () => {
    const b = await share({})
    const reg = await register(b.code)
    // Through inject: a WHATWG client would resolve `%2e%2e` before sending (and plain `..` is
    // resolved by every client and by the server's URL parsing alike).
    for (const p of [
      'docs%2F..%2F..%2Fprivate',
      'docs%2F%2e%2e%2Fx',
      '%2Fdocs/a.txt',
      'docs%5Ca.txt',
      'elsewhere/a.txt',
    ]) {
      const r = await s.app.inject({
        method: 'GET',
        url: `/api/rest/v1${pub(b.code, `/files/${p}`)}`,
        headers: { 'X-Bundle-Registration-Code': reg },
      })
      expect({ p, status: r.statusCode, type: r.json().type }).toEqual({
        p,
        status: 404,
        type: 'not-found/bundle-path-not-found',
      })
    }
    const perms = await call(s, 'GET', `/permissions?user_id=${b.user.id}`, { key: s.adminKey })
    for (const p of perms.body) await call(s, 'DELETE', `/permissions/${p.id}`, { key: s.adminKey })
    expectError(
      await call(s, 'GET', pub(b.code, '/files/docs/a.txt'), as(reg)),
      404,
      'not-found/bundle-path-not-found',
    )
  })

  it('refuses downloads of write-only and preview-only links', async () => {
    const w = await share({ permissions: 'write' })
    const wr = await register(w.code)
    expect((await call(s, 'GET', pub(w.code, '/folders/docs'), as(wr))).body).toEqual([])
    expectError(
      await call(s, 'GET', pub(w.code, '/files/docs/a.txt'), as(wr)),
      403,
      'not-authorized/read-permission-required',
    )
    const p = await share({ permissions: 'preview_only' })
    const pr = await register(p.code)
    expectError(
      await call(s, 'GET', pub(p.code, '/files/docs/a.txt'), as(pr)),
      422,
      'processing-failure/bundle-only-allows-previews',
    )
  })

  it('zips shared folders recursively, for the asking address only', async () => {
    const b = await share({})
    const reg = await register(b.code, { name: 'Zed' })
    const link = await call(s, 'POST', pub(b.code, '/zip'), { ...as(reg), body: { paths: ['docs'] } })
    expect(link.status).toBe(200)
    const res = await fetch(link.body.download_uri)
    expect(res.status).toBe(200)
    const dir = mkdtempSync(join(tmpdir(), 'wharf-zip-'))
    writeFileSync(join(dir, 'x.zip'), Buffer.from(await res.arrayBuffer()))
    const listing = execFileSync('unzip', ['-Z1', join(dir, 'x.zip')])
      .toString()
      .split('\n')
      .filter(Boolean)
    expect(listing.sort()).toEqual(['docs/', 'docs/a.txt', 'docs/sub/', 'docs/sub/b.txt'])
    expect(execFileSync('unzip', ['-p', join(dir, 'x.zip'), 'docs/sub/b.txt']).toString()).toBe('bee')
    const whole = await call(s, 'POST', pub(b.code, '/zip'), { ...as(reg), body: { paths: [''] } })
    writeFileSync(
      join(dir, 'all.zip'),
      Buffer.from(await (await fetch(whole.body.download_uri)).arrayBuffer()),
    )
    const all = execFileSync('unzip', ['-Z1', join(dir, 'all.zip')])
      .toString()
      .split('\n')
      .filter(Boolean)
    expect(all.sort()).toEqual(['docs/', 'docs/a.txt', 'docs/sub/', 'docs/sub/b.txt', 'inbox/'])
    expectError(
      await call(s, 'POST', pub(b.code, '/zip'), { ...as(reg), body: { paths: ['elsewhere'] } }),
      404,
      'not-found/bundle-path-not-found',
    )

    const url = new URL(link.body.download_uri)
    const foreign = await s.app.inject({ method: 'GET', url: url.pathname, remoteAddress: '192.0.2.9' })
    expect({ status: foreign.statusCode, type: foreign.json().type }).toEqual({
      status: 403,
      type: 'not-authorized/zip-download-ip-mismatch',
    })
    const tampered = `${url.pathname.replace(/~[^/]+/, '~AAAA')}`
    expectError(
      { status: (await fetch(`${s.url}${tampered}`)).status, ...(await jsonOf(`${s.url}${tampered}`)) },
      401,
      'not-authenticated/invalid-or-expired-code',
    )

    const zipDownloads = await call(s, 'GET', `/bundle_downloads?bundle_id=${b.id}`, { key: b.key })
    expect(zipDownloads.body.map((d: any) => [d.download_method, d.path]).sort()).toEqual([
      ['full_zip', 'docs/a.txt'],
      ['full_zip', 'docs/a.txt'],
      ['full_zip', 'docs/sub/b.txt'],
      ['full_zip', 'docs/sub/b.txt'],
    ])
  })

  it('takes an upload through a link a site-wide key made (no creator: a site admin’s reach)', async () => {
    n++
    await makeFolder(s, `site${n}/inbox`)
    const made = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: [`site${n}/inbox`], permissions: 'write' },
    })
    expect(made.status).toBe(201)
    const reg = await register(made.body.code, { name: 'Sid' })
    const path = pub(made.body.code, '/files/inbox/s.txt')
    const put = await call(s, 'POST', path, { ...as(reg), body: { action: 'put' } })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('site'))).status).toBe(200)
    // Another visit of the link cannot end it: its uploads go to a folder of its own.
    const other = await register(made.body.code, { name: 'Other' })
    expectError(
      await call(s, 'POST', path, { ...as(other), body: { action: 'end', ref: put.body.ref } }),
      404,
      'not-found/file-upload-not-found',
    )
    const end = await call(s, 'POST', path, { ...as(reg), body: { action: 'end', ref: put.body.ref } })
    expect(end.status).toBe(201)
    expect(end.body.path).toBe('inbox/Sid/s.txt')
  })

  it('names the shared paths to a registered visitor of a link with a password, not before', async () => {
    const b = await share({ permissions: 'write', password: 'pw for names' })
    const before = await call(s, 'GET', pub(b.code))
    expect(before.status).toBe(200)
    expect(before.body.paths).toBeUndefined()
    const reg = await register(b.code, { password: 'pw for names' })
    const after = await call(s, 'GET', pub(b.code), as(reg))
    expect(after.body.paths).toEqual(['docs', 'inbox'])
    // A registration of another link unlocks nothing here.
    const other = await share({ permissions: 'read' })
    const foreign = await register(other.code)
    expect((await call(s, 'GET', pub(b.code), as(foreign))).body.paths).toBeUndefined()
  })

  it('takes uploads into a folder per visitor', async () => {
    const b = await share({ permissions: 'read_write' })
    const reg = await register(b.code, { name: 'Uma/Upload' })
    const put = await call(s, 'POST', pub(b.code, '/files/inbox/up.txt'), {
      ...as(reg),
      body: { action: 'put' },
    })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('uploaded'))).status).toBe(200)
    const end = await call(s, 'POST', pub(b.code, '/files/inbox/up.txt'), {
      ...as(reg),
      body: { action: 'end', ref: put.body.ref },
    })
    expect(end.status).toBe(201)
    expect(end.body.path).toBe('inbox/Uma_Upload/up.txt')
    const stored = await call(s, 'GET', `/files/${b.root}/inbox/Uma_Upload/up.txt`, { key: s.adminKey })
    expect(stored.status).toBe(200)
    const actions = await call(s, 'GET', '/bundle_actions', { key: b.key })
    expect(actions.body).toHaveLength(1)
    expect(actions.body[0]).toMatchObject({
      action: 'create',
      path: 'inbox/Uma_Upload/up.txt',
      bundle_registration_name: 'Uma/Upload',
    })

    const ro = await share({})
    const roReg = await register(ro.code)
    expectError(
      await call(s, 'POST', pub(ro.code, '/files/inbox/x.txt'), { ...as(roReg), body: { action: 'put' } }),
      403,
      'not-authorized/write-permission-required',
    )
  })

  it('reports visitors’ downloads and uploads to the site’s webhook as interface web', async () => {
    const listener = await startListener()
    try {
      const set = await call(s, 'PATCH', '/webhook_settings', {
        key: s.adminKey,
        body: { url: listener.url, triggers: ['Upload', 'Download'], enabled: true },
      })
      expect(set.status).toBe(200)
      const b = await share({ permissions: 'read_write', dont_separate_submissions_by_folder: true })
      const reg = await register(b.code)
      const file = await call(s, 'GET', pub(b.code, '/files/docs/a.txt'), as(reg))
      expect((await fetch(file.body.download_uri)).status).toBe(200)
      const put = await call(s, 'POST', pub(b.code, '/files/inbox/w.txt'), {
        ...as(reg),
        body: { action: 'put' },
      })
      expect((await putBytes(put.body.upload_uri, Buffer.from('w'))).status).toBe(200)
      const end = await call(s, 'POST', pub(b.code, '/files/inbox/w.txt'), {
        ...as(reg),
        body: { action: 'end', ref: put.body.ref },
      })
      expect(end.body.path).toBe('inbox/w.txt')
      const got = await listener.waitFor(2)
      const seen = got.map((r) => [r.json.operation, r.json.protocol, r.json.path, r.json.username]).sort()
      expect(seen).toEqual([
        ['Download', 'web', `${b.root}/docs/a.txt`, b.user.username],
        ['Upload', 'web', `${b.root}/inbox/w.txt`, b.user.username],
      ])
    } finally {
      await call(s, 'PATCH', '/webhook_settings', {
        key: s.adminKey,
        body: { url: null, triggers: [], enabled: false },
      })
      await listener.close()
    }
  })

  it('shows the owners’ lists in XML, and an anonymous visitor’s folder by their code', async () => {
    const b = await share({ permissions: 'write' })
    const reg = await register(b.code)
    const put = await call(s, 'POST', pub(b.code, '/files/inbox/anon.txt'), {
      ...as(reg),
      body: { action: 'put' },
    })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('a'))).status).toBe(200)
    const end = await call(s, 'POST', pub(b.code, '/files/inbox/anon.txt'), {
      ...as(reg),
      body: { action: 'end', ref: put.body.ref },
    })
    expect(end.body.path).toBe(`inbox/${reg.slice(0, 8)}/anon.txt`)
    const xml = await call(s, 'GET', '/bundle_registrations.xml', { key: b.key })
    expect(xml.status).toBe(200)
    expect(xml.text).toContain('<bundle-registrations')
    expect(xml.text).toContain(`<bundle_code>${b.code}</bundle_code>`)
    const actions = await call(s, 'GET', '/bundle_actions.xml', { key: b.key })
    expect(actions.text).toContain(`<path>inbox/${reg.slice(0, 8)}/anon.txt</path>`)
    expectError(
      await call(s, 'GET', '/bundle_actions?user_id=1', { key: b.key }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
  })

  it('bans an address, and locks the link, after too many wrong passwords', async () => {
    const b = await share({ password: 'right one' })
    const attempt = (password: string, remoteAddress: string) =>
      s.app.inject({
        method: 'POST',
        url: `/api/rest/v1${pub(b.code, '/registrations')}`,
        payload: { password },
        remoteAddress,
      })
    for (let i = 0; i < 3; i++) {
      const r = await attempt('wrong', '192.0.2.50')
      expect({ status: r.statusCode, type: r.json().type }).toEqual({
        status: 401,
        type: 'not-authenticated/invalid-credentials',
      })
    }
    const banned = await attempt('right one', '192.0.2.50')
    expect({ status: banned.statusCode, type: banned.json().type }).toEqual({
      status: 429,
      type: 'rate-limited/too-many-login-attempts',
    })
    const bans = await call(s, 'GET', '/banned_addresses', { key: s.adminKey })
    expect(bans.body.map((x: any) => x.address)).toContain('192.0.2.50')
    expect(bans.body.map((x: any) => x.address).filter((a: string) => a.startsWith('bundle:'))).toEqual([])
    // From any other address too: the link's own count reached the threshold.
    const locked = await attempt('right one', '192.0.2.51')
    expect({ status: locked.statusCode, type: locked.json().type }).toEqual({
      status: 429,
      type: 'rate-limited/too-many-login-attempts',
    })
  })

  it('names upload folders from path_template, and refuses uploads beside or below the shared folders', async () => {
    const b = await share({
      permissions: 'write',
      path_template: '{{company}}/%Y',
      dont_allow_folders_in_uploads: true,
    })
    const reg = await register(b.code, { company: 'Acme', email: 'a@acme.example' })
    const put = await call(s, 'POST', pub(b.code, '/files/inbox/t.txt'), {
      ...as(reg),
      body: { action: 'put' },
    })
    expect((await putBytes(put.body.upload_uri, Buffer.from('t'))).status).toBe(200)
    const end = await call(s, 'POST', pub(b.code, '/files/inbox/t.txt'), {
      ...as(reg),
      body: { action: 'end', ref: put.body.ref },
    })
    // Dated by the registration (in UTC, no time zone given).
    const regs = await call(s, 'GET', `/bundle_registrations?bundle_id=${b.id}`, { key: b.key })
    expect(end.body.path).toBe(`inbox/Acme/${regs.body[0].created_at.slice(0, 4)}/t.txt`)
    expectError(
      await call(s, 'POST', pub(b.code, '/files/inbox'), { ...as(reg), body: { action: 'put' } }),
      422,
      'processing-failure/bundle-operation-requires-subfolder',
    )
    expectError(
      await call(s, 'POST', pub(b.code, '/files/inbox/sub/t.txt'), { ...as(reg), body: { action: 'put' } }),
      422,
      'processing-failure/bundle-operation-requires-subfolder',
    )
  })
})
