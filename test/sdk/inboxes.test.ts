import Files from 'files.com/lib/Files.js'
import Bundle from 'files.com/lib/models/Bundle.js'
import InboxRecipient from 'files.com/lib/models/InboxRecipient.js'
import InboxRegistration from 'files.com/lib/models/InboxRegistration.js'
import InboxUpload from 'files.com/lib/models/InboxUpload.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { putBytes } from '../helpers/files.js'
import { call, dialects, type TestServer } from '../helpers/server.js'
import { startSmtp, type TestSmtp } from '../helpers/smtp.js'
import { describeError, linkMaker, type Recorder, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: inboxes (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  let smtp: TestSmtp
  beforeAll(async () => {
    smtp = await startSmtp()
  })
  afterAll(async () => smtp?.close())
  sdkServer(
    dialect,
    (server, recorder) => {
      s = server
      rec = recorder
    },
    () => ({ SMTP_URL: smtp.url, MAIL_FROM: 'files@files.example' }),
  )

  const owner = (folder: string) => linkMaker(s, folder)

  /** A visitor registers on the link and uploads one file through the public API. */
  async function upload(code: string, name: string, path: string): Promise<void> {
    const reg = await call(s, 'POST', `/public/bundles/${code}/registrations`, { body: { name } })
    expect(reg.status).toBe(201)
    const headers = { 'X-Bundle-Registration-Code': reg.body.code as string }
    const url = `/public/bundles/${code}/files/${path}`
    const put = await call(s, 'POST', url, { headers, body: { action: 'put' } })
    expect((await putBytes(put.body.upload_uri, Buffer.from(name))).status).toBe(200)
    const end = await call(s, 'POST', url, { headers, body: { action: 'end', ref: put.body.ref } })
    expect(end.status).toBe(201)
  }

  it('creates and lists inbox recipients, mailing the inbox', async () => {
    const me = await owner('sdk-inbox')
    Files.setApiKey(me.key)
    const inbox = await Bundle.create({ paths: ['sdk-inbox'], permissions: 'write' })
    const added = await InboxRecipient.create({
      inbox_id: inbox.id,
      recipient: 'johndoe@client.example',
      name: 'John Smith',
      company: 'Acme Ltd',
      note: 'Just a note.',
      share_after_create: true,
    })
    expect(added.attributes).toEqual({
      company: 'Acme Ltd',
      name: 'John Smith',
      note: 'Just a note.',
      recipient: 'johndoe@client.example',
      sent_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    })
    const [mail] = await smtp.waitFor(1)
    expect(mail!.to).toEqual(['johndoe@client.example'])
    expect(mail!.raw).toContain(inbox.url)

    await InboxRecipient.create({
      inbox_id: inbox.id,
      recipient: 'two@client.example',
      share_after_create: false,
    })
    // Auto-pagination follows the cursor over pages of one.
    const listed = await InboxRecipient.list({ inbox_id: inbox.id, per_page: 1 })
    expect(listed.map((r) => r.recipient)).toEqual(['johndoe@client.example', 'two@client.example'])
    expect(rec.requests.filter((r) => r.url.startsWith('/api/rest/v1/inbox_recipients?')).length).toBe(2)

    const readOnly = await Bundle.create({ paths: ['sdk-inbox'] })
    const notInbox = await sdkError(InboxRecipient.list({ inbox_id: readOnly.id }))
    expect(describeError(notInbox)).toEqual({
      className: 'NotFound_InboxNotFoundError',
      type: 'not-found/inbox-not-found',
      httpCode: 404,
    })
  })

  it('lists an inbox’s registrations and uploads', async () => {
    const me = await owner('sdk-drop')
    Files.setApiKey(me.key)
    const inbox = await Bundle.create({ paths: ['sdk-drop'], permissions: 'write', description: 'Drop here' })
    await upload(inbox.code, 'Ann', 'sdk-drop/one.txt')
    await upload(inbox.code, 'Ben', 'sdk-drop/two.txt')

    const regs = await InboxRegistration.list({ folder_behavior_id: inbox.id })
    expect(regs.map((r) => [r.name, r.inbox_id, r.inbox_title])).toEqual([
      ['Ann', inbox.id, 'Drop here'],
      ['Ben', inbox.id, 'Drop here'],
    ])
    const uploads = await InboxUpload.list({
      filter: { folder_behavior_id: inbox.id },
      sort_by: { created_at: 'desc' },
    })
    expect(uploads.map((u) => u.path)).toEqual(['sdk-drop/Ben/two.txt', 'sdk-drop/Ann/one.txt'])
    expect(uploads[0]!.inbox_registration).toMatchObject({ name: 'Ben', inbox_id: inbox.id, code: null })

    const other = await owner('sdk-other')
    Files.setApiKey(other.key)
    expect(await InboxUpload.list()).toEqual([])
    const refused = await sdkError(InboxRegistration.list({ folder_behavior_id: inbox.id }))
    expect(describeError(refused)).toEqual({
      className: 'NotAuthorized_NeedAdminPermissionForInboxError',
      type: 'not-authorized/need-admin-permission-for-inbox',
      httpCode: 403,
    })
  })
})
