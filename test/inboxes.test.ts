import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { wakeMailWorkers } from '../src/mail/mail-queue.js'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { putBytes } from './helpers/files.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'
import { startSmtp, type TestSmtp } from './helpers/smtp.js'

/** Inboxes are write-only share links: their recipients, visits and uploads, for their owners. */
describe.each(dialects)('inboxes (%s)', (dialect) => {
  let smtp: TestSmtp
  beforeAll(async () => {
    smtp = await startSmtp()
  })
  afterAll(async () => smtp?.close())
  const s = useServer(dialect, () => ({
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Files <files@files.example>',
    SHARE_MAIL_LIMIT_PER_HOUR: '3',
  }))

  let alice: { id: number; key: string }
  let bob: { id: number; key: string }
  let inbox: { id: number; code: string; url: string }
  let readLink: { id: number }
  let bobInbox: { id: number; code: string }

  async function owner(name: string) {
    const u = await makeUser(s, { username: name, email: `${name}@corp.example` })
    await makeFolder(s, `${name}-in`)
    await makeFile(s, `${name}-in/readme.txt`)
    await grant(s, u.id, `${name}-in`, 'full')
    await s.container.db
      .updateTable('users')
      .set({ attachments_permission: 1, name: `${name} Smith` })
      .where('id', '=', u.id)
      .execute()
    return { id: u.id, key: (await makeKey(s, u.id)).key }
  }

  async function link(key: string, body: Record<string, unknown>) {
    const r = await call(s, 'POST', '/bundles', { key, body })
    expect(r.status).toBe(201)
    return r.body as { id: number; code: string; url: string }
  }

  const pub = (code: string, rest = '') => `/public/bundles/${code}${rest}`

  /** A visit of the link, and one file uploaded through it; returns the registration's id. */
  async function visitAndUpload(code: string, visitor: Record<string, unknown>, file: string) {
    const reg = await call(s, 'POST', pub(code, '/registrations'), { body: visitor })
    expect(reg.status).toBe(201)
    const as = { headers: { 'X-Bundle-Registration-Code': reg.body.code as string } }
    const put = await call(s, 'POST', pub(code, `/files/${file}`), { ...as, body: { action: 'put' } })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('sent in'))).status).toBe(200)
    const end = await call(s, 'POST', pub(code, `/files/${file}`), {
      ...as,
      body: { action: 'end', ref: put.body.ref },
    })
    expect(end.status).toBe(201)
  }

  // The owners and their links, made once the server is up.
  describe('with two owners’ inboxes', () => {
    beforeAll(async () => {
      alice = await owner('alice')
      bob = await owner('bob')
      inbox = await link(alice.key, {
        paths: ['alice-in'],
        permissions: 'write',
        description: 'Tax papers',
        require_registration: true,
      })
      readLink = await link(alice.key, { paths: ['alice-in'], permissions: 'read' })
      bobInbox = await link(bob.key, { paths: ['bob-in'], permissions: 'write' })
    })

    it('mails an inbox to a recipient, asking for files, and lists its recipients', async () => {
      const r = await call(s, 'POST', '/inbox_recipients', {
        key: alice.key,
        body: {
          inbox_id: inbox.id,
          recipient: 'carol@client.example',
          name: 'Carol',
          company: 'Client & Co',
          note: 'Your 2025 papers, please',
          share_after_create: true,
        },
      })
      expect(r.status).toBe(201)
      expect(r.body).toEqual({
        company: 'Client & Co',
        name: 'Carol',
        note: 'Your 2025 papers, please',
        recipient: 'carol@client.example',
        sent_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      })
      const [mail] = await smtp.waitFor(1)
      expect(mail!.to).toEqual(['carol@client.example'])
      expect(mail!.header('Subject')).toBe('alice Smith has asked you to send files')
      expect(mail!.raw).toContain(inbox.url)
      expect(mail!.raw).toContain('Your 2025 papers, please')

      const quiet = await call(s, 'POST', '/inbox_recipients', {
        key: alice.key,
        body: { inbox_id: inbox.id, recipient: 'dave@client.example' },
      })
      expect(quiet.status).toBe(201)
      expect(quiet.body).toMatchObject({ recipient: 'dave@client.example', sent_at: null })

      const first = await call(s, 'GET', `/inbox_recipients?inbox_id=${inbox.id}&per_page=1`, {
        key: alice.key,
      })
      expect(first.status).toBe(200)
      expect(first.body.map((x: any) => x.recipient)).toEqual(['carol@client.example'])
      const next = first.headers.get('x-files-cursor-next')
      expect(next).toBeTruthy()
      const second = await call(
        s,
        'GET',
        `/inbox_recipients?inbox_id=${inbox.id}&per_page=1&cursor=${encodeURIComponent(next!)}`,
        { key: alice.key },
      )
      expect(second.body.map((x: any) => x.recipient)).toEqual(['dave@client.example'])
      expect(second.headers.get('x-files-cursor-next')).toBeNull()

      const xml = await call(s, 'GET', `/inbox_recipients.xml?inbox_id=${inbox.id}`, { key: alice.key })
      expect(xml.status).toBe(200)
      expect(xml.text).toContain('<inbox-recipients')
      expect(xml.text).toContain('<company>Client &amp; Co</company>')

      // A site admin sees every inbox.
      const admin = await call(s, 'GET', `/inbox_recipients?inbox_id=${inbox.id}`, { key: s.adminKey })
      expect(admin.body).toHaveLength(2)
    })

    it('records visits and uploads through the inbox and lists them', async () => {
      await visitAndUpload(
        inbox.code,
        { name: 'Carol', email: 'Carol@Client.example', company: 'Client & Co' },
        'alice-in/w2.pdf',
      )
      await visitAndUpload(
        inbox.code,
        { name: 'Erin', email: 'erin@client.example', company: 'Erin Ltd' },
        'alice-in/1099.pdf',
      )
      await visitAndUpload(bobInbox.code, {}, 'bob-in/other.txt')
      // A link that lets visitors download too is no inbox: its visit and upload are not listed.
      const both = await link(alice.key, { paths: ['alice-in'], permissions: 'read_write' })
      await visitAndUpload(both.code, { name: 'Zed' }, 'alice-in/zed.txt')
      const bundleActions = await call(s, 'GET', '/bundle_actions', { key: alice.key })
      expect(bundleActions.body.map((a: any) => a.path)).toContain('alice-in/Zed/zed.txt')

      const regs = await call(s, 'GET', `/inbox_registrations?folder_behavior_id=${inbox.id}`, {
        key: alice.key,
      })
      expect(regs.status).toBe(200)
      expect(regs.body).toEqual([
        {
          code: null,
          name: 'Carol',
          company: 'Client & Co',
          email: 'Carol@Client.example',
          ip: '127.0.0.1',
          clickwrap_body: null,
          form_field_set_id: null,
          form_field_data: null,
          inbox_id: inbox.id,
          inbox_recipient_id: null,
          inbox_title: 'Tax papers',
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        },
        expect.objectContaining({ name: 'Erin', inbox_id: inbox.id }),
      ])
      const regIds = (
        await s.container.db
          .selectFrom('bundle_registrations')
          .select('id')
          .where('bundle_id', '=', inbox.id)
          .orderBy('id')
          .execute()
      ).map((r) => Number(r.id))

      const page1 = await call(s, 'GET', `/inbox_registrations?folder_behavior_id=${inbox.id}&per_page=1`, {
        key: alice.key,
      })
      expect(page1.body.map((r: any) => r.name)).toEqual(['Carol'])
      const page2 = await call(
        s,
        'GET',
        `/inbox_registrations?folder_behavior_id=${inbox.id}&per_page=1&cursor=${encodeURIComponent(page1.headers.get('x-files-cursor-next')!)}`,
        { key: alice.key },
      )
      expect(page2.body.map((r: any) => r.name)).toEqual(['Erin'])

      // A site admin without folder_behavior_id: every inbox's visits, and only inboxes'.
      const all = await call(s, 'GET', '/inbox_registrations', { key: s.adminKey })
      expect(all.body.map((r: any) => r.inbox_id)).toEqual([inbox.id, inbox.id, bobInbox.id])

      const regsXml = await call(s, 'GET', `/inbox_registrations.xml?folder_behavior_id=${inbox.id}`, {
        key: alice.key,
      })
      expect(regsXml.status).toBe(200)
      expect(regsXml.text).toContain('<inbox-registrations')
      expect(regsXml.text).toContain('<name>Erin</name>')

      const uploads = await call(s, 'GET', '/inbox_uploads', { key: alice.key })
      expect(uploads.status).toBe(200)
      expect(uploads.body).toEqual([
        {
          inbox_registration: expect.objectContaining({ name: 'Carol', inbox_id: inbox.id, code: null }),
          path: 'alice-in/Carol/w2.pdf',
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        },
        {
          inbox_registration: expect.objectContaining({ name: 'Erin', inbox_id: inbox.id }),
          path: 'alice-in/Erin/1099.pdf',
          created_at: expect.any(String),
        },
      ])
      const newest = await call(s, 'GET', '/inbox_uploads?sort_by[created_at]=desc&per_page=1', {
        key: alice.key,
      })
      expect(newest.body.map((u: any) => u.path)).toEqual(['alice-in/Erin/1099.pdf'])
      const older = await call(
        s,
        'GET',
        `/inbox_uploads?sort_by[created_at]=desc&per_page=1&cursor=${encodeURIComponent(newest.headers.get('x-files-cursor-next')!)}`,
        { key: alice.key },
      )
      expect(older.body.map((u: any) => u.path)).toEqual(['alice-in/Carol/w2.pdf'])

      const byReg = await call(
        s,
        'GET',
        `/inbox_uploads?filter[folder_behavior_id]=${inbox.id}&filter[inbox_registration_id]=${regIds[1]}`,
        { key: alice.key },
      )
      expect(byReg.body.map((u: any) => u.path)).toEqual(['alice-in/Erin/1099.pdf'])
      const since = await call(
        s,
        'GET',
        `/inbox_uploads?filter[folder_behavior_id]=${inbox.id}&filter_gt[created_at]=2000-01-01T00:00:00Z`,
        { key: alice.key },
      )
      expect(since.body).toHaveLength(2)
      const future = await call(s, 'GET', '/inbox_uploads?filter_gteq[created_at]=2099-01-01T00:00:00Z', {
        key: alice.key,
      })
      expect(future.body).toEqual([])

      // Each owner sees their own inboxes' uploads; a site admin every inbox's.
      const bobs = await call(s, 'GET', '/inbox_uploads', { key: bob.key })
      expect(bobs.body.map((u: any) => u.path)).toEqual([
        expect.stringMatching(/^bob-in\/[^/]+\/other\.txt$/),
      ])
      const admins = await call(s, 'GET', '/inbox_uploads', { key: s.adminKey })
      expect(admins.body.map((u: any) => u.inbox_registration.inbox_id)).toEqual([
        inbox.id,
        inbox.id,
        bobInbox.id,
      ])

      const xml = await call(s, 'GET', '/inbox_uploads.xml', { key: alice.key })
      expect(xml.status).toBe(200)
      expect(xml.text).toContain('<inbox-uploads')
      expect(xml.text).toContain('<path>alice-in/Carol/w2.pdf</path>')
      expect(xml.text).toContain('<inbox_title>Tax papers</inbox_title>')

      // A recipient "has registrations" once someone registered with their address.
      const registered = await call(
        s,
        'GET',
        `/inbox_recipients?inbox_id=${inbox.id}&filter[has_registrations]=true`,
        {
          key: alice.key,
        },
      )
      expect(registered.body.map((x: any) => x.recipient)).toEqual(['carol@client.example'])
      const waiting = await call(
        s,
        'GET',
        `/inbox_recipients?inbox_id=${inbox.id}&filter[has_registrations]=false`,
        {
          key: alice.key,
        },
      )
      expect(waiting.body.map((x: any) => x.recipient)).toEqual(['dave@client.example'])
    })

    it('refuses a link that is not an inbox, and an id that names nothing, with inbox-not-found', async () => {
      for (const id of [readLink.id, 999_999]) {
        for (const [method, path, body] of [
          ['GET', `/inbox_recipients?inbox_id=${id}`],
          ['POST', '/inbox_recipients', { inbox_id: id, recipient: 'x@client.example' }],
          ['GET', `/inbox_registrations?folder_behavior_id=${id}`],
          ['GET', `/inbox_uploads?filter[folder_behavior_id]=${id}`],
        ] as const) {
          expectError(
            await call(s, method, path, { key: alice.key, ...(body ? { body } : {}) }),
            404,
            'not-found/inbox-not-found',
          )
        }
      }
    })

    it('refuses another user’s inbox with need-admin-permission-for-inbox', async () => {
      for (const [method, path, body] of [
        ['GET', `/inbox_recipients?inbox_id=${inbox.id}`],
        ['POST', '/inbox_recipients', { inbox_id: inbox.id, recipient: 'x@client.example' }],
        ['GET', `/inbox_registrations?folder_behavior_id=${inbox.id}`],
        ['GET', `/inbox_uploads?filter[folder_behavior_id]=${inbox.id}`],
      ] as const) {
        expectError(
          await call(s, method, path, { key: bob.key, ...(body ? { body } : {}) }),
          403,
          'not-authorized/need-admin-permission-for-inbox',
        )
      }
      const rows = await s.container.db
        .selectFrom('bundle_recipients')
        .select('recipient')
        .where('recipient', '=', 'x@client.example')
        .execute()
      expect(rows).toEqual([])
    })

    it('refuses missing and malformed parameters', async () => {
      expectError(
        await call(s, 'GET', '/inbox_recipients', { key: alice.key }),
        400,
        'bad-request/request-params-required',
      )
      expectError(
        await call(s, 'GET', '/inbox_recipients?inbox_id=abc', { key: alice.key }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'GET', '/inbox_registrations', { key: alice.key }),
        400,
        'bad-request/request-params-required',
      )
      expectError(
        await call(s, 'GET', '/inbox_uploads?filter_like[created_at]=2025', { key: alice.key }),
        400,
        'bad-request/invalid-filter-combination',
      )
      expectError(
        await call(s, 'GET', '/inbox_uploads?filter[path]=x', { key: alice.key }),
        400,
        'bad-request/invalid-filter-field',
      )
      expectError(
        await call(s, 'GET', '/inbox_uploads?sort_by[path]=asc', { key: alice.key }),
        400,
        'bad-request/invalid-filter-field',
      )
      expectError(
        await call(s, 'GET', `/inbox_recipients?inbox_id=${inbox.id}&filter[has_registrations]=maybe`, {
          key: alice.key,
        }),
        400,
        'bad-request/request-params-invalid',
      )
      const other = await call(s, 'GET', `/inbox_recipients?inbox_id=${inbox.id}&per_page=1`, {
        key: alice.key,
      })
      expectError(
        await call(
          s,
          'GET',
          `/inbox_uploads?cursor=${encodeURIComponent(other.headers.get('x-files-cursor-next')!)}`,
          {
            key: alice.key,
          },
        ),
        400,
        'bad-request/invalid-cursor',
      )
      expectError(
        await call(s, 'POST', '/inbox_recipients', { key: alice.key, body: { inbox_id: inbox.id } }),
        400,
        'bad-request/request-params-required',
      )
      expectError(
        await call(s, 'POST', '/inbox_recipients', {
          key: alice.key,
          body: { inbox_id: inbox.id, recipient: 'not an address' },
        }),
        422,
        'processing-failure/model-save-error',
      )
      expectError(await call(s, 'GET', `/inbox_uploads`), 401, 'not-authenticated/authentication-required')
    })

    it('refuses a recipient twice, and more mail than the hourly limit', async () => {
      const mine = await link(alice.key, { paths: ['alice-in'], permissions: 'write' })
      expectError(
        await call(s, 'POST', '/inbox_recipients', {
          key: alice.key,
          body: { inbox_id: inbox.id, recipient: 'CAROL@client.example' },
        }),
        422,
        'processing-failure/recipient-already-shared',
      )
      // One message this hour already (the first test's); the limit is three.
      for (const to of ['f@client.example', 'g@client.example']) {
        const r = await call(s, 'POST', '/inbox_recipients', {
          key: alice.key,
          body: { inbox_id: mine.id, recipient: to, share_after_create: true },
        })
        expect(r.status).toBe(201)
      }
      expectError(
        await call(s, 'POST', '/inbox_recipients', {
          key: alice.key,
          body: { inbox_id: mine.id, recipient: 'h@client.example', share_after_create: true },
        }),
        429,
        'rate-limited/too-many-shares',
      )
      wakeMailWorkers()
      await smtp.waitFor(3)
    })

    it('refuses a user who may not share links', async () => {
      const carl = await makeUser(s, { username: 'carl', email: 'carl@corp.example' })
      await makeFolder(s, 'carl-in')
      await grant(s, carl.id, 'carl-in', 'full')
      const made = await link(s.adminKey, { paths: ['carl-in'], permissions: 'write', user_id: carl.id })
      const key = (await makeKey(s, carl.id)).key
      const listed = await call(s, 'GET', `/inbox_recipients?inbox_id=${made.id}`, { key })
      expect(listed.status).toBe(200)
      expectError(
        await call(s, 'POST', '/inbox_recipients', {
          key,
          body: { inbox_id: made.id, recipient: 'i@client.example' },
        }),
        403,
        'not-authorized/not-allowed-to-create-bundle',
      )
    })
  })
})

describe.each(dialects)('inboxes without mail (%s)', (dialect) => {
  const s = useServer(dialect)

  it('records a recipient without mail, and refuses to mail one, or an app key’s change', async () => {
    const u = await makeUser(s, { username: 'dora' })
    await makeFolder(s, 'dora-in')
    await grant(s, u.id, 'dora-in', 'full')
    await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { attachments_permission: true } })
    const key = (await makeKey(s, u.id)).key
    const made = await call(s, 'POST', '/bundles', {
      key,
      body: { paths: ['dora-in'], permissions: 'write' },
    })
    expect(made.status).toBe(201)
    const inboxId = made.body.id as number

    expectError(
      await call(s, 'POST', '/inbox_recipients', {
        key,
        body: { inbox_id: inboxId, recipient: 'a@client.example', share_after_create: true },
      }),
      422,
      'processing-failure/mail-not-configured',
    )
    const quiet = await call(s, 'POST', '/inbox_recipients', {
      key,
      body: { inbox_id: inboxId, recipient: 'a@client.example' },
    })
    expect(quiet.status).toBe(201)
    expect(quiet.body.sent_at).toBeNull()

    const office = (await makeKey(s, u.id, { permission_set: 'office_integration' })).key
    expectError(
      await call(s, 'POST', '/inbox_recipients', {
        key: office,
        body: { inbox_id: inboxId, recipient: 'b@client.example' },
      }),
      403,
      'not-authorized/api-key-only-for-office-integration',
    )
    const listed = await call(s, 'GET', `/inbox_recipients?inbox_id=${inboxId}`, { key })
    expect(listed.body.map((r: any) => r.recipient)).toEqual(['a@client.example'])
  })
})
