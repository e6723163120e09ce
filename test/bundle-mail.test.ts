import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { createLogger } from '../src/logger.js'
import { queueMail, wakeMailWorkers } from '../src/mail/mail-queue.js'
import { MailWorker } from '../src/mail/mail-worker.js'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { putBytes } from './helpers/files.js'
import { captureLog } from './helpers/log-capture.js'
import {
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  startServer,
  type TestServer,
} from './helpers/server.js'
import { startSmtp, type TestSmtp } from './helpers/smtp.js'

const FROM = 'Example Files <files@files.example>'

/** The decoded text of a received message (quoted-printable soft breaks and escapes undone). */
function decoded(raw: string): string {
  return raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
}

describe('mail settings', () => {
  const base = { DATA_DIR: '/tmp/wharf-mail-config' }
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig({ ...base, ...env })
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError)
      return (err as ConfigError).problems
    }
    throw new Error('expected a ConfigError')
  }

  it('needs MAIL_FROM with SMTP_URL, and takes the Message-ID domain from it', () => {
    expect(problems({ SMTP_URL: 'smtp://mail.example.com:587' })).toEqual([
      'MAIL_FROM is required when SMTP_URL is set',
    ])
    const c = loadConfig({
      ...base,
      SMTP_URL: 'smtps://u:p@mail.example.com',
      MAIL_FROM: 'Files <f@Files.Example>',
    })
    expect(c.mail).toMatchObject({ enabled: true, from: 'Files <f@Files.Example>', domain: 'files.example' })
    expect(loadConfig(base).mail.enabled).toBe(false)
  })

  it('refuses a URL that is not SMTP without echoing it, and a sender that is not an address', () => {
    const p = problems({ SMTP_URL: 'http://user:s3cret-pass@mail.example.com', MAIL_FROM: 'not an address' })
    expect(p).toEqual([
      'SMTP_URL must be an smtp:// or smtps:// URL, e.g. smtp://user:password@mail.example.com:587',
      'MAIL_FROM must be an address or "Name <address>" (got "not an address")',
    ])
    expect(p.join('\n')).not.toContain('s3cret-pass')
  })
})

describe.each(dialects)('share links by e-mail (%s)', (dialect) => {
  let s: TestServer
  let smtp: TestSmtp
  let alice: { id: number; key: string }
  let bob: { id: number; key: string }
  let bundleId: number
  let bundleUrl: string

  async function sharer(name: string, folder: string) {
    const u = await makeUser(s, { username: name, email: `${name}@corp.example` })
    await makeFolder(s, folder)
    await makeFile(s, `${folder}/report.pdf`)
    await grant(s, u.id, folder, 'full')
    await s.container.db
      .updateTable('users')
      .set({ attachments_permission: 1, name: `${name} Smith` })
      .where('id', '=', u.id)
      .execute()
    return { id: u.id, key: (await makeKey(s, u.id)).key }
  }

  async function newBundle(key: string, path: string) {
    const r = await call(s, 'POST', '/bundles', { key, body: { paths: [path] } })
    expect(r.status).toBe(201)
    return r.body as { id: number; url: string }
  }

  /** Lets the running worker send everything queued so far. */
  async function settle(): Promise<void> {
    wakeMailWorkers()
    await s.container.mail.worker!.idle()
  }

  const outbox = () => s.container.db.selectFrom('mail_outbox').selectAll().orderBy('id').execute()

  beforeAll(async () => {
    smtp = await startSmtp()
    s = await startServer(dialect, {
      SMTP_URL: smtp.url,
      MAIL_FROM: FROM,
      SHARE_MAIL_LIMIT_PER_HOUR: '5',
    })
    alice = await sharer('alice', 'alice-files')
    bob = await sharer('bob', 'bob-files')
    const b = await newBundle(alice.key, 'alice-files')
    bundleId = b.id
    bundleUrl = b.url
  })
  afterAll(async () => {
    await s?.close()
    await smtp?.close()
  })

  it('mails the link to each recipient, as text and HTML, and records them', async () => {
    const r = await call(s, 'POST', `/bundles/${bundleId}/share`, {
      key: alice.key,
      body: {
        to: ['Carol@client.example'],
        note: 'The <b>figures</b> & more',
        recipients: [{ recipient: 'dave@client.example', name: 'Dave', company: 'Client & Co' }],
      },
    })
    expect(r.status).toBe(204)
    const got = await smtp.waitFor(2)
    expect(got.map((m) => m.to[0]).sort()).toEqual(['Carol@client.example', 'dave@client.example'])
    for (const m of got) {
      expect(m.from).toBe('files@files.example')
      expect(m.header('Subject')).toBe('alice Smith has shared files with you')
      expect(m.header('Message-ID')).toMatch(/@files\.example>$/)
      const body = decoded(m.raw)
      expect(body).toContain('text/plain')
      expect(body).toContain('text/html')
      expect(body).toContain(bundleUrl)
      // The note as written in the text, escaped in the HTML.
      expect(body).toContain('The <b>figures</b> & more')
      expect(body).toContain('The &lt;b&gt;figures&lt;/b&gt; &amp; more')
      expect(body).toContain(`<a href="${bundleUrl}">`)
    }
    // The server's acceptance comes a moment before the row says so.
    await settle()
    const rows = await outbox()
    expect(rows.map((o) => [o.kind, o.state, Number(o.sender_user_id)])).toEqual([
      ['bundle_share', 'sent', alice.id],
      ['bundle_share', 'sent', alice.id],
    ])

    const first = await call(s, 'GET', `/bundle_recipients?bundle_id=${bundleId}&per_page=1`, {
      key: alice.key,
    })
    expect(first.status).toBe(200)
    expect(first.body).toEqual([
      {
        company: null,
        name: null,
        note: 'The <b>figures</b> & more',
        recipient: 'Carol@client.example',
        sent_at: expect.any(String),
      },
    ])
    const next = first.headers.get('x-files-cursor-next')
    expect(next).toBeTruthy()
    const second = await call(
      s,
      'GET',
      `/bundle_recipients?bundle_id=${bundleId}&per_page=1&cursor=${next}`,
      {
        key: alice.key,
      },
    )
    expect(second.body).toEqual([
      {
        company: 'Client & Co',
        name: 'Dave',
        note: 'The <b>figures</b> & more',
        recipient: 'dave@client.example',
        sent_at: expect.any(String),
      },
    ])

    const xml = await call(s, 'GET', `/bundle_recipients.xml?bundle_id=${bundleId}`, { key: alice.key })
    expect(xml.status).toBe(200)
    expect(xml.text).toContain('<bundle_recipients')
    expect(xml.text).toContain('<recipient>dave@client.example</recipient>')
    expect(xml.text).toContain('<company>Client &amp; Co</company>')
  })

  it('refuses shares without recipients, with a bad address, or of a link the caller does not see', async () => {
    const before = (await outbox()).length
    expectError(
      await call(s, 'POST', `/bundles/${bundleId}/share`, { key: alice.key, body: {} }),
      400,
      'bad-request/request-params-required',
    )
    const bad = await call(s, 'POST', `/bundles/${bundleId}/share`, {
      key: alice.key,
      body: { to: ['ok@client.example', 'evil@client.example\r\nBcc: x@y.example'] },
    })
    expectError(bad, 422, 'processing-failure/model-save-error')
    expect(Object.keys(bad.body.model_errors)).toEqual(['to'])
    expectError(
      await call(s, 'POST', `/bundles/${bundleId}/share`, {
        key: bob.key,
        body: { to: ['x@client.example'] },
      }),
      404,
      'not-found',
    )
    expectError(
      await call(s, 'GET', `/bundle_recipients?bundle_id=${bundleId}`, { key: bob.key }),
      404,
      'not-found',
    )
    expect((await outbox()).length).toBe(before)
  })

  it('adds a recipient without mailing, refuses the same address again, and mails with share_after_create', async () => {
    const b = await newBundle(bob.key, 'bob-files')
    await settle()
    const received = smtp.received.length
    const quiet = await call(s, 'POST', '/bundle_recipients', {
      key: bob.key,
      body: { bundle_id: b.id, recipient: 'erin@client.example', name: 'Erin' },
    })
    expect(quiet.status).toBe(201)
    expect(quiet.body).toEqual({
      company: null,
      name: 'Erin',
      note: null,
      recipient: 'erin@client.example',
      sent_at: null,
    })
    expectError(
      await call(s, 'POST', '/bundle_recipients', {
        key: bob.key,
        body: { bundle_id: b.id, recipient: 'ERIN@client.example', share_after_create: true },
      }),
      422,
      'processing-failure/recipient-already-shared',
    )
    const sent = await call(s, 'POST', '/bundle_recipients', {
      key: bob.key,
      body: { bundle_id: b.id, recipient: 'frank@client.example', note: 'hi', share_after_create: true },
    })
    expect(sent.status).toBe(201)
    expect(sent.body.sent_at).toEqual(expect.any(String))
    const got = await smtp.waitFor(received + 1)
    expect(got.slice(received).map((m) => m.to)).toEqual([['frank@client.example']])
    expect(decoded(got[received]!.raw)).toContain(b.url)
    // A share mails an existing recipient anew.
    expect(
      (
        await call(s, 'POST', `/bundles/${b.id}/share`, {
          key: bob.key,
          body: { to: ['erin@client.example'] },
        })
      ).status,
    ).toBe(204)
    await smtp.waitFor(received + 2)
    const list = await call(s, 'GET', `/bundle_recipients?bundle_id=${b.id}`, { key: bob.key })
    expect(
      list.body.map((r: { recipient: string; sent_at: string | null }) => [r.recipient, r.sent_at !== null]),
    ).toEqual([
      ['erin@client.example', true],
      ['frank@client.example', true],
    ])
  })

  it('mails at most SHARE_MAIL_LIMIT_PER_HOUR recipients per user, counting what every process queued', async () => {
    const carl = await sharer('carl', 'carl-files')
    const b = await newBundle(carl.key, 'carl-files')
    // Two messages another process queued for carl within the hour.
    await queueMail(
      s.container.db,
      ['a', 'b'].map((n) => ({
        siteId: s.container.site.id,
        kind: 'bundle_share',
        to: `${n}@elsewhere.example`,
        subject: 's',
        text: 't',
        senderUserId: carl.id,
      })),
      s.container.now(),
    )
    const three = ['1', '2', '3'].map((n) => `r${n}@client.example`)
    expect(
      (await call(s, 'POST', `/bundles/${b.id}/share`, { key: carl.key, body: { to: three } })).status,
    ).toBe(204)
    const over = await call(s, 'POST', `/bundles/${b.id}/share`, {
      key: carl.key,
      body: { to: ['r4@client.example'] },
    })
    expectError(over, 429, 'rate-limited/too-many-shares')
    expectError(
      await call(s, 'POST', '/bundle_recipients', {
        key: carl.key,
        body: { bundle_id: b.id, recipient: 'r5@client.example', share_after_create: true },
      }),
      429,
      'rate-limited/too-many-shares',
    )
    // Nothing of a refused share is kept; recording without mail is not limited.
    const list = await call(s, 'GET', `/bundle_recipients?bundle_id=${b.id}`, { key: carl.key })
    expect(list.body.map((r: { recipient: string }) => r.recipient)).toEqual(three)
    expect(
      (
        await call(s, 'POST', '/bundle_recipients', {
          key: carl.key,
          body: { bundle_id: b.id, recipient: 'r6@client.example' },
        })
      ).status,
    ).toBe(201)
    // Another user's limit is their own.
    const d = await newBundle(bob.key, 'bob-files')
    expect(
      (await call(s, 'POST', `/bundles/${d.id}/share`, { key: bob.key, body: { to: ['g@client.example'] } }))
        .status,
    ).toBe(204)
  })

  it('manages notifications (JSON and XML) and mails the users they name when the visitor side queues them', async () => {
    const admin = { key: s.adminKey }
    const created = await call(s, 'POST', '/bundle_notifications', {
      key: alice.key,
      body: { bundle_id: bundleId, notify_on_upload: true },
    })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      bundle_id: bundleId,
      id: expect.any(Number),
      notify_on_registration: false,
      notify_on_upload: true,
      notify_user_id: alice.id,
    })
    const id = created.body.id as number
    expectError(
      await call(s, 'POST', '/bundle_notifications', {
        key: alice.key,
        body: { bundle_id: bundleId, notify_user_id: bob.id },
      }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
    expectError(await call(s, 'GET', `/bundle_notifications/${id}`, { key: bob.key }), 404, 'not-found')
    expectError(
      await call(s, 'PATCH', `/bundle_notifications/${id}`, {
        key: bob.key,
        body: { notify_on_upload: false },
      }),
      404,
      'not-found',
    )
    // A user without an e-mail address, notified of registrations and uploads by a site admin.
    const quiet = await makeUser(s, { username: 'no-mail' })
    const other = await call(s, 'POST', '/bundle_notifications', {
      ...admin,
      body: {
        bundle_id: bundleId,
        notify_user_id: quiet.id,
        notify_on_registration: true,
        notify_on_upload: true,
      },
    })
    expect(other.status).toBe(201)
    const bobs = await call(s, 'POST', '/bundle_notifications', {
      ...admin,
      body: { bundle_id: bundleId, notify_user_id: bob.id, notify_on_registration: true },
    })
    expect(bobs.status).toBe(201)

    const patched = await call(s, 'PATCH', `/bundle_notifications/${id}`, {
      key: alice.key,
      body: { id, notify_on_registration: true, bundle_id: bundleId },
    })
    expect(patched.body).toMatchObject({ notify_on_registration: true, notify_on_upload: true })
    expect((await call(s, 'GET', `/bundle_notifications/${id}`, { key: alice.key })).body).toEqual(
      patched.body,
    )
    const mine = await call(s, 'GET', `/bundle_notifications?filter[bundle_id]=${bundleId}`, {
      key: alice.key,
    })
    expect(mine.body.map((n: { id: number }) => n.id)).toEqual([id, other.body.id, bobs.body.id])
    expect((await call(s, 'GET', '/bundle_notifications', { key: bob.key })).body).toEqual([])
    const xml = await call(s, 'GET', `/bundle_notifications/${id}.xml`, { key: alice.key })
    expect(xml.text).toContain('<notify_on_upload type="boolean">true</notify_on_upload>')

    // The visitor side's call, in its transaction: an upload tells alice only.
    await settle()
    const received = smtp.received.length
    const bundle = await s.container.services.bundles.visible({ ...(await principalOf(alice.id)) }, bundleId)
    const ids = await s.container.db.transaction().execute((trx) =>
      s.container.services.bundleMail.queueNotifications(trx, {
        bundle,
        event: 'upload',
        visitor: { name: 'Visitor <script>', email: 'v@guest.example' },
        paths: ['alice-files/in/<new>.txt'],
      }),
    )
    expect(ids).toHaveLength(1)
    // The caller wakes the workers once its transaction has committed.
    wakeMailWorkers()
    const [m] = (await smtp.waitFor(received + 1)).slice(received)
    expect(m!.to).toEqual(['alice@corp.example'])
    expect(m!.header('Subject')).toBe(`New upload to share link ${bundle.code}`)
    const body = decoded(m!.raw)
    expect(body).toContain('Visitor <script> <v@guest.example> uploaded files to the share link')
    expect(body).toContain('Visitor &lt;script&gt;')
    expect(body).toContain('&lt;new&gt;.txt')
    expect(body).not.toContain('<li>alice-files/in/<new>')
    // A registration tells alice and bob (the user without an address is skipped).
    const reg = await s.container.db.transaction().execute((trx) =>
      s.container.services.bundleMail.queueNotifications(trx, {
        bundle,
        event: 'registration',
        visitor: { name: 'V' },
      }),
    )
    expect(reg).toHaveLength(2)
    wakeMailWorkers()
    const regs = (await smtp.waitFor(received + 3)).slice(received + 1)
    expect(regs.map((r) => r.to[0]).sort()).toEqual(['alice@corp.example', 'bob@corp.example'])

    expect((await call(s, 'DELETE', `/bundle_notifications/${id}`, { key: alice.key })).status).toBe(204)
    expectError(await call(s, 'GET', `/bundle_notifications/${id}`, { key: alice.key }), 404, 'not-found')
  })

  it("mails a link's notified users when a visitor registers and uploads through the public API", async () => {
    const upload = await call(s, 'POST', '/bundles', {
      key: alice.key,
      body: { paths: ['alice-files'], permissions: 'read_write' },
    })
    expect(upload.status).toBe(201)
    const { id, code } = upload.body as { id: number; code: string }
    const n = await call(s, 'POST', '/bundle_notifications', {
      key: alice.key,
      body: { bundle_id: id, notify_on_registration: true, notify_on_upload: true },
    })
    expect(n.status).toBe(201)
    await settle()
    const before = smtp.received.length
    const pub = (rest: string) => `/public/bundles/${code}${rest}`
    const reg = await call(s, 'POST', pub('/registrations'), {
      body: { name: 'Nora Visitor', email: 'nora@guest.example' },
    })
    expect(reg.status).toBe(201)
    const [registered] = (await smtp.waitFor(before + 1)).slice(before)
    expect(registered!.to).toEqual(['alice@corp.example'])
    expect(decoded(registered!.raw)).toContain('Nora Visitor')
    const as = { headers: { 'X-Bundle-Registration-Code': reg.body.code as string } }
    const put = await call(s, 'POST', pub('/files/alice-files/drop.txt'), { ...as, body: { action: 'put' } })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('dropped'))).status).toBe(200)
    const end = await call(s, 'POST', pub('/files/alice-files/drop.txt'), {
      ...as,
      body: { action: 'end', ref: put.body.ref },
    })
    expect(end.status).toBe(201)
    const [uploaded] = (await smtp.waitFor(before + 2)).slice(before + 1)
    expect(uploaded!.to).toEqual(['alice@corp.example'])
    expect(uploaded!.header('Subject')).toBe(`New upload to share link ${code}`)
    expect(decoded(uploaded!.raw)).toContain('drop.txt')
  })

  it('loses no share on a crash: a message committed while no worker ran is sent once by the next one', async () => {
    await settle()
    await s.container.mail.worker!.stop()
    const before = smtp.received.length
    const b = await newBundle(alice.key, 'alice-files')
    expect(
      (
        await call(s, 'POST', `/bundles/${b.id}/share`, {
          key: alice.key,
          body: { to: ['late@client.example'] },
        })
      ).status,
    ).toBe(204)
    const [row] = await s.container.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('to_address', '=', 'late@client.example')
      .execute()
    expect(row).toMatchObject({ state: 'queued', attempts: 0 })
    expect(smtp.received.length).toBe(before)
    // The process restarts: a new worker finds the message.
    const w = new MailWorker(s.container.db, {
      smtpUrl: smtp.url,
      from: FROM,
      concurrency: 2,
      leaseMs: 60_000,
      pollMs: 3_600_000,
      retrySchedule: [60],
    })
    try {
      await w.start()
      await smtp.waitFor(before + 1)
      await w.idle()
      expect(smtp.received.slice(before).map((m) => m.to)).toEqual([['late@client.example']])
      const sent = await s.container.db
        .selectFrom('mail_outbox')
        .selectAll()
        .where('id', '=', row!.id)
        .executeTakeFirstOrThrow()
      expect(sent).toMatchObject({ state: 'sent', attempts: 1 })
      expect(smtp.received[before]!.header('Message-ID')).toBe(sent.message_id)
    } finally {
      await w.stop()
    }
  })

  it('never logs the SMTP password, whatever the server answers', async () => {
    const log = captureLog()
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as net.AddressInfo
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const [id] = await queueMail(
      s.container.db,
      [{ siteId: s.container.site.id, kind: 'test', to: 'x@client.example', subject: 's', text: 't' }],
      s.container.now(),
    )
    for (const url of [
      `smtp://wharf:s3cret-word@127.0.0.1:${port}`,
      smtp.url.replace('//', '//wharf:s3cret-word@'),
    ]) {
      const w = new MailWorker(s.container.db, {
        smtpUrl: url,
        from: FROM,
        concurrency: 1,
        leaseMs: 60_000,
        pollMs: 3_600_000,
        retrySchedule: [0, 0],
        logger: createLogger('debug', log.stream),
      })
      try {
        await w.start()
        wakeMailWorkers()
        await w.idle()
      } finally {
        await w.stop()
      }
    }
    const row = await s.container.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('id', '=', id!)
      .executeTakeFirstOrThrow()
    expect(row.attempts).toBeGreaterThanOrEqual(2)
    expect(log.lines.length).toBeGreaterThanOrEqual(2)
    expect(log.lines.join('\n')).not.toContain('s3cret-word')
    expect(row.last_error ?? '').not.toContain('s3cret-word')
  })

  it('forgets a link’s recipients and notifications with the link', async () => {
    const b = await newBundle(alice.key, 'alice-files')
    const add = await call(s, 'POST', '/bundle_recipients', {
      key: alice.key,
      body: { bundle_id: b.id, recipient: 'gone@client.example' },
    })
    expect(add.status).toBe(201)
    const n = await call(s, 'POST', '/bundle_notifications', { key: alice.key, body: { bundle_id: b.id } })
    expect(n.status).toBe(201)
    expect((await call(s, 'DELETE', `/bundles/${b.id}`, { key: alice.key })).status).toBe(204)
    const db = s.container.db
    expect(
      await db.selectFrom('bundle_recipients').select('id').where('bundle_id', '=', b.id).execute(),
    ).toEqual([])
    expectError(
      await call(s, 'GET', `/bundle_notifications/${n.body.id}`, { key: alice.key }),
      404,
      'not-found',
    )
    expectError(
      await call(s, 'GET', `/bundle_recipients?bundle_id=${b.id}`, { key: alice.key }),
      404,
      'not-found',
    )
  })

  async function principalOf(userId: number) {
    const user = await s.container.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', userId)
      .executeTakeFirstOrThrow()
    return {
      siteId: s.container.site.id,
      user,
      apiKey: null,
      sessionHash: null,
      permissionSet: 'full' as const,
      ip: '127.0.0.1',
      interface: 'restapi' as const,
    }
  }
})

describe.each(dialects)('share links without SMTP_URL (%s)', (dialect) => {
  let s: TestServer

  beforeAll(async () => {
    s = await startServer(dialect)
  })
  afterAll(async () => s?.close())

  it('answers mail-not-configured to what would send mail, and does the rest', async () => {
    expect(s.container.mail.worker).toBeNull()
    await makeFolder(s, 'docs')
    const b = await call(s, 'POST', '/bundles', { key: s.adminKey, body: { paths: ['docs'] } })
    expect(b.status).toBe(201)
    const share = await call(s, 'POST', `/bundles/${b.body.id}/share`, {
      key: s.adminKey,
      body: { to: ['a@client.example'] },
    })
    expectError(share, 422, 'processing-failure/mail-not-configured')
    expect(share.body.detail ?? share.body.error).toContain('SMTP_URL')
    expectError(
      await call(s, 'POST', '/bundle_recipients', {
        key: s.adminKey,
        body: { bundle_id: b.body.id, recipient: 'a@client.example', share_after_create: true },
      }),
      422,
      'processing-failure/mail-not-configured',
    )
    expect(
      (
        await call(s, 'POST', '/bundle_recipients', {
          key: s.adminKey,
          body: { bundle_id: b.body.id, recipient: 'a@client.example' },
        })
      ).status,
    ).toBe(201)
    const n = await call(s, 'POST', '/bundle_notifications', {
      key: s.adminKey,
      body: {
        bundle_id: b.body.id,
        notify_user_id: (await makeUser(s, { email: 'u@corp.example' })).id,
        notify_on_upload: true,
      },
    })
    expect(n.status).toBe(201)
    const bundle = await s.container.db
      .selectFrom('bundles')
      .selectAll()
      .where('id', '=', b.body.id)
      .executeTakeFirstOrThrow()
    const ids = await s.container.db
      .transaction()
      .execute((trx) =>
        s.container.services.bundleMail.queueNotifications(trx, { bundle, event: 'upload', visitor: {} }),
      )
    expect(ids).toEqual([])
    expect(await s.container.db.selectFrom('mail_outbox').selectAll().execute()).toEqual([])
  })
})
