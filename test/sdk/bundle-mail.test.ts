import Files from 'files.com/lib/Files.js'
import Bundle from 'files.com/lib/models/Bundle.js'
import BundleNotification from 'files.com/lib/models/BundleNotification.js'
import BundleRecipient from 'files.com/lib/models/BundleRecipient.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { wakeMailWorkers } from '../../src/mail/mail-queue.js'
import { dialects, type TestServer } from '../helpers/server.js'
import { startSmtp, type TestSmtp } from '../helpers/smtp.js'
import { describeError, linkMaker, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: sharing by e-mail and notifications (%s)', (dialect) => {
  let s: TestServer
  let smtp: TestSmtp
  beforeAll(async () => {
    smtp = await startSmtp()
  })
  afterAll(async () => smtp?.close())
  sdkServer(
    dialect,
    (server) => {
      s = server
    },
    () => ({ SMTP_URL: smtp.url, MAIL_FROM: 'files@files.example', SHARE_MAIL_LIMIT_PER_HOUR: '3' }),
  )

  const sharer = (folder: string) => linkMaker(s, folder)

  it('shares a link with bundle.share(), lists and adds recipients', async () => {
    const me = await sharer('sdk-share')
    Files.setApiKey(me.key)
    const bundle = await Bundle.create({ paths: ['sdk-share'] })
    await bundle.share({
      to: ['one@client.example'],
      note: 'From the SDK',
      recipients: [{ name: 'Two', company: 'Acme Ltd', recipient: 'two@client.example' }],
    })
    const got = await smtp.waitFor(2)
    expect(got.map((m) => m.to[0]).sort()).toEqual(['one@client.example', 'two@client.example'])
    expect(got[0]!.raw).toContain(bundle.url)

    const added = await BundleRecipient.create({
      bundle_id: bundle.id,
      recipient: 'three@client.example',
      name: 'Three',
      note: 'Just a note.',
      share_after_create: false,
    })
    expect(added.attributes).toEqual({
      company: null,
      name: 'Three',
      note: 'Just a note.',
      recipient: 'three@client.example',
      sent_at: null,
    })
    const listed = await BundleRecipient.list({ bundle_id: bundle.id, per_page: 2 })
    expect(listed.map((r) => [r.recipient, r.name, r.company])).toEqual([
      ['one@client.example', null, null],
      ['two@client.example', 'Two', 'Acme Ltd'],
      ['three@client.example', 'Three', null],
    ])
    const again = await sdkError(
      BundleRecipient.create({ bundle_id: bundle.id, recipient: 'Three@client.example' }),
    )
    expect(describeError(again)).toEqual({
      className: 'ProcessingFailure_RecipientAlreadySharedError',
      type: 'processing-failure/recipient-already-shared',
      httpCode: 422,
    })
    // Two mailed this hour; two more would pass the limit of three.
    const many = await sdkError(bundle.share({ to: ['four@client.example', 'five@client.example'] }))
    expect(describeError(many)).toEqual({
      className: 'RateLimited_TooManySharesError',
      type: 'rate-limited/too-many-shares',
      httpCode: 429,
    })
  })

  it('creates, finds, lists, updates and deletes notifications, and they are mailed', async () => {
    const me = await sharer('sdk-notify')
    Files.setApiKey(me.key)
    const bundle = await Bundle.create({ paths: ['sdk-notify'] })
    const n = await BundleNotification.create({ bundle_id: bundle.id, notify_on_upload: true })
    expect(n.attributes).toEqual({
      bundle_id: bundle.id,
      id: n.id,
      notify_on_registration: false,
      notify_on_upload: true,
      notify_user_id: me.id,
    })
    const found = await BundleNotification.find(n.id)
    expect(found.attributes).toEqual(n.attributes)
    const updated = await found.update({ notify_on_registration: true, notify_on_upload: false })
    expect(updated.attributes).toMatchObject({ notify_on_registration: true, notify_on_upload: false })
    const listed = await BundleNotification.list({ filter: { bundle_id: bundle.id } })
    expect(listed.map((x) => x.id)).toEqual([n.id])

    const before = smtp.received.length
    const row = await s.container.services.bundles.visible(
      {
        siteId: s.container.site.id,
        user: null,
        apiKey: null,
        sessionHash: null,
        permissionSet: 'full',
        ip: '127.0.0.1',
        interface: 'restapi',
      },
      bundle.id,
    )
    await s.container.db.transaction().execute((trx) =>
      s.container.services.bundleMail.queueNotifications(trx, {
        bundle: row,
        event: 'registration',
        visitor: { name: 'Guest' },
      }),
    )
    wakeMailWorkers()
    const [m] = (await smtp.waitFor(before + 1)).slice(before)
    expect(m!.to).toEqual(['sdk-notify@corp.example'])
    expect(m!.header('Subject')).toBe(`New registration on share link ${bundle.code}`)

    await updated.delete()
    const gone = await sdkError(BundleNotification.find(n.id))
    expect(describeError(gone)).toMatchObject({ httpCode: 404, type: 'not-found' })
  })
})
