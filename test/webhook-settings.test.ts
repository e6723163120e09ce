import { XMLParser } from 'fast-xml-parser'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { findWebhookSettings } from '../src/webhooks/listener-settings.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  type CallOptions,
  call,
  dialects,
  expectError,
  grant,
  login,
  makeKey,
  makeUser,
  useServer,
} from './helpers/server.js'

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseTagValue: false })
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
const HOOK = 'https://hooks.example.com/wharf'

describe.each(dialects)('webhook settings (%s)', (dialect) => {
  let adminSession: string
  let adminId: number
  let adminUserKey: string
  let regularKey: string
  let folderAdminKey: string

  const get = (o: CallOptions = { key: s.adminKey }) => call(s, 'GET', '/webhook_settings', o)
  const patch = (body: unknown, o: CallOptions = { key: s.adminKey }) =>
    call(s, 'PATCH', '/webhook_settings', { ...o, body })
  const settingsRow = () =>
    s.container.db
      .selectFrom('webhook_settings')
      .selectAll()
      .where('site_id', '=', s.container.site.id)
      .executeTakeFirst()
  const settingsActions = () =>
    s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', 'update')
      .where('targets', 'like', '%webhook_settings%')
      .orderBy('id')
      .execute()

  const s = useServer(dialect)
  beforeAll(async () => {
    adminSession = await login(s, ADMIN_USERNAME, ADMIN_PASSWORD)
    const admin = await s.container.db
      .selectFrom('users')
      .select('id')
      .where('username', '=', ADMIN_USERNAME)
      .executeTakeFirstOrThrow()
    adminId = admin.id
    adminUserKey = (await makeKey(s, adminId)).key
    regularKey = (await makeKey(s, (await makeUser(s)).id)).key
    const folderAdmin = await makeUser(s)
    await grant(s, folderAdmin.id, 'teams', 'admin')
    folderAdminKey = (await makeKey(s, folderAdmin.id)).key
  })
  // Every test starts from a site that never saved settings.
  beforeEach(async () => {
    await s.container.db.deleteFrom('webhook_settings').execute()
    await s.container.db.deleteFrom('actions').where('action', '=', 'update').execute()
  })

  describe('GET /webhook_settings', () => {
    it('shows the defaults and fresh secrets, created on first use and stable afterwards', async () => {
      expect(await settingsRow()).toBeUndefined()
      const first = await get()
      expect(first.status).toBe(200)
      expect(Object.keys(first.body).sort()).toEqual(
        ['enabled', 'signing_secret', 'triggers', 'updated_at', 'url', 'verification_token'].sort(),
      )
      expect(first.body).toMatchObject({ url: null, triggers: [], enabled: false })
      expect(first.body.verification_token).toMatch(/^[0-9a-f]{32}$/)
      expect(first.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
      expect(Buffer.from(first.body.signing_secret.slice('whsec_'.length), 'base64')).toHaveLength(24)
      expect(first.body.updated_at).toMatch(ISO)
      expect(await settingsRow()).toMatchObject({ verification_token: first.body.verification_token })

      const second = await get({ session: adminSession })
      expect(second.status).toBe(200)
      expect(second.body).toEqual(first.body)
      // Reading creates the row but is no change: no Action.
      expect(await settingsActions()).toHaveLength(0)
    })

    it('gives each site that never saved settings its own secrets', async () => {
      const a = (await get()).body
      await s.container.db.deleteFrom('webhook_settings').execute()
      const b = (await get()).body
      expect(b.verification_token).not.toBe(a.verification_token)
      expect(b.signing_secret).not.toBe(a.signing_secret)
    })

    it('answers XML under the webhook-settings root', async () => {
      await patch({ url: HOOK, triggers: ['Upload', 'Create Folder'] })
      const r = await call(s, 'GET', '/webhook_settings.xml', { key: s.adminKey })
      expect(r.status).toBe(200)
      const doc = xml.parse(r.text)
      expect(Object.keys(doc).filter((k) => !k.startsWith('?'))).toEqual(['webhook-settings'])
      const rec = doc['webhook-settings']
      expect(rec.url).toBe(HOOK)
      expect(rec.triggers).toEqual({ '@_type': 'array', trigger: ['Upload', 'Create Folder'] })
      expect(rec.enabled).toEqual({ '#text': 'false', '@_type': 'boolean' })
      expect(rec.verification_token).toMatch(/^[0-9a-f]{32}$/)
    })
  })

  describe('PATCH /webhook_settings', () => {
    it('saves url, triggers (duplicates dropped, order kept) and enabled, and applies them at once', async () => {
      const before = (await get()).body
      const r = await patch({
        url: HOOK,
        triggers: ['Move', 'Upload', 'Move', 'Create Folder'],
        enabled: true,
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        url: HOOK,
        triggers: ['Move', 'Upload', 'Create Folder'],
        enabled: true,
        verification_token: before.verification_token,
        signing_secret: before.signing_secret,
      })
      expect((await get()).body).toEqual(r.body)
      // What the dispatcher reads.
      const seen = await findWebhookSettings(s.container.db, s.container.site.id)
      expect(seen).toMatchObject({ url: HOOK, triggers: ['Move', 'Upload', 'Create Folder'], enabled: true })
    })

    it('takes an XML body with an array of triggers and answers XML', async () => {
      const r = await call(s, 'PATCH', '/webhook_settings.xml', {
        key: s.adminKey,
        contentType: 'application/xml',
        raw: `<webhook-settings><url>${HOOK}?a=1&amp;b=2</url><triggers type="array"><trigger>Download</trigger><trigger>Create Folder</trigger></triggers><enabled type="boolean">true</enabled></webhook-settings>`,
      })
      expect(r.status).toBe(200)
      const rec = xml.parse(r.text)['webhook-settings']
      expect(rec.url).toBe(`${HOOK}?a=1&b=2`)
      expect(rec.triggers.trigger).toEqual(['Download', 'Create Folder'])
      expect(rec.enabled['#text']).toBe('true')
      expect((await get()).body).toMatchObject({ triggers: ['Download', 'Create Folder'], enabled: true })

      const cleared = await call(s, 'PATCH', '/webhook_settings', {
        key: s.adminKey,
        contentType: 'application/xml',
        raw: '<settings><triggers type="array"/><enabled>false</enabled></settings>',
      })
      expect(cleared.status).toBe(200)
      expect(cleared.body).toMatchObject({ url: `${HOOK}?a=1&b=2`, triggers: [], enabled: false })
    })

    it('clears the url with null or an empty string while disabled', async () => {
      await patch({ url: HOOK })
      const withNull = await patch({ url: null, enabled: false })
      expect(withNull.status).toBe(200)
      expect(withNull.body).toMatchObject({ url: null, enabled: false })
      await patch({ url: HOOK })
      const withEmpty = await patch({ url: '' })
      expect(withEmpty.status).toBe(200)
      expect(withEmpty.body.url).toBeNull()
    })

    it.each([
      ['a scheme other than http(s)', { url: 'ftp://files.example.com/in' }, 'url'],
      ['a relative URL', { url: '/hooks/wharf' }, 'url'],
      ['a URL without //', { url: 'https:hooks.example.com' }, 'url'],
      ['credentials in the URL', { url: 'https://user:secret@hooks.example.com/' }, 'url'],
      ['a user name alone in the URL', { url: 'https://user@hooks.example.com/' }, 'url'],
      ['a URL over 2048 characters', { url: `https://hooks.example.com/${'a'.repeat(2023)}` }, 'url'],
      ['a URL with a line break', { url: 'https://hooks.example.com/\nx' }, 'url'],
      ['a URL with a C1 control character', { url: 'https://hooks.example.com/a\u0085b' }, 'url'],
      ['an unknown trigger', { triggers: ['Upload', 'Teleport'] }, 'triggers'],
      ['a trigger spelled in another case', { triggers: ['upload'] }, 'triggers'],
      ['enabled without a url', { enabled: true }, 'url'],
      ['enabled while clearing the url', { url: '', enabled: true }, 'url'],
    ])('refuses %s with a model-save error on that field', async (_name, body, field) => {
      const before = (await get()).body
      const r = await patch(body)
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors)).toEqual([field])
      expect(Object.keys(r.body.model_error_keys)).toEqual([field])
      expect(r.body.errors).toHaveLength(1)
      expect((await get()).body).toEqual(before)
      expect(await settingsActions()).toHaveLength(0)
    })

    it('takes a URL of exactly 2048 characters, and any host name: its addresses are vetted at delivery', async () => {
      const url = `https://hooks.example.com/${'a'.repeat(2022)}`
      expect(url).toHaveLength(2048)
      expect((await patch({ url })).status).toBe(200)
      const local = await patch({ url: 'http://localhost:9/hook', triggers: ['Upload'], enabled: true })
      expect(local.status).toBe(200)
    })

    it('names every bad field at once', async () => {
      const r = await patch({ url: 'ftp://x.example.com', triggers: ['Nope'] })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors).sort()).toEqual(['triggers', 'url'])
    })

    it('refuses clearing the url of enabled settings', async () => {
      await patch({ url: HOOK, enabled: true })
      const r = await patch({ url: null })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(r.body.model_errors.url).toEqual(["can't be blank when webhooks are enabled"])
      expect((await get()).body.url).toBe(HOOK)
    })

    it('refuses wrong types and unknown fields like every other route', async () => {
      for (const body of [
        { enabled: 'yes' },
        { triggers: { a: 1 } },
        { url: { href: HOOK } },
        { colour: 'red' },
        { triggers: Array(65).fill('Upload') },
      ]) {
        expectError(await patch(body), 400, 'bad-request/request-params-invalid')
      }
      const malformed = await patch(undefined, { key: s.adminKey, raw: '{"url":' })
      expectError(malformed, 400, 'bad-request/invalid-body')
      // JSON values are never coerced: a lone string is not a list, a number not a string.
      for (const triggers of ['Upload', 5, [5]]) {
        const r = await patch({ triggers })
        expectError(r, 400, 'bad-request/request-params-invalid')
        expect(r.body.error).toContain('triggers')
      }
      // XML is text: a lone <triggers> element is a list of one.
      const xml = await patch(undefined, {
        key: s.adminKey,
        raw: '<webhook-settings><triggers>Upload</triggers></webhook-settings>',
        contentType: 'application/xml',
      })
      expect(xml.status).toBe(200)
      expect((await get()).body.triggers).toEqual(['Upload'])
    })

    it('refuses a changed verification_token or signing_secret and passes them back unchanged', async () => {
      const current = (await get()).body
      for (const field of ['verification_token', 'signing_secret', 'updated_at']) {
        const r = await patch({ enabled: false, [field]: 'something-else' })
        expectError(r, 400, 'bad-request/request-params-invalid')
      }
      // What a client read, sent back whole with one change.
      const r = await patch({ ...current, url: HOOK })
      expect(r.status).toBe(200)
      expect(r.body.url).toBe(HOOK)
      expect(r.body.verification_token).toBe(current.verification_token)
      expect(r.body.signing_secret).toBe(current.signing_secret)
    })

    it('records an update Action with the caller, only when something changed', async () => {
      const r = await patch({ url: HOOK, triggers: ['Upload'] }, { session: adminSession })
      expect(r.status).toBe(200)
      const actions = await settingsActions()
      expect(actions).toHaveLength(1)
      expect(actions[0]).toMatchObject({
        user_id: adminId,
        username: ADMIN_USERNAME,
        path: '',
        display: `${ADMIN_USERNAME} changed the webhook settings (url, triggers)`,
        interface: 'restapi',
      })
      expect(JSON.parse(actions[0]!.targets)).toEqual([{ type: 'webhook_settings' }])

      expect((await patch({ url: HOOK, triggers: ['Upload'] })).status).toBe(200)
      expect(await settingsActions()).toHaveLength(1)

      expect((await patch({ enabled: true })).status).toBe(200)
      const bySiteKey = (await settingsActions())[1]!
      expect(bySiteKey).toMatchObject({ user_id: null, username: null })
      expect(bySiteKey.display).toMatch(
        /^Site-wide API key \(key ID #\d+\) changed the webhook settings \(enabled\)$/,
      )

      // The history keeps the text in every display mode: there is no file path to rebuild it from.
      const h = await call(s, 'GET', '/history?display=full', { key: s.adminKey })
      const shown = h.body.find((a: { id: number }) => a.id === actions[0]!.id)
      expect(shown.display).toBe(actions[0]!.display)
    })
  })

  describe('who may', () => {
    it('lets site admins in: site-wide key, admin session, admin user key', async () => {
      for (const o of [{ key: s.adminKey }, { session: adminSession }, { key: adminUserKey }]) {
        expect((await get(o)).status).toBe(200)
        expect((await patch({ triggers: ['Delete'] }, o)).status).toBe(200)
      }
    })

    it('refuses users who are not site admins, folder admins included', async () => {
      for (const key of [regularKey, folderAdminKey]) {
        expectError(await get({ key }), 403, 'not-authorized/site-admin-required')
        expectError(await patch({ enabled: false }, { key }), 403, 'not-authorized/site-admin-required')
      }
      // A refused GET creates nothing.
      expect(await settingsRow()).toBeUndefined()
    })

    it('refuses keys limited to file operations or a folder, even a site admin’s', async () => {
      const desktop = (await makeKey(s, adminId, { permission_set: 'desktop_app' })).key
      expectError(await get({ key: desktop }), 403, 'not-authorized/api-key-only-for-desktop-app')
      const none = (await makeKey(s, adminId, { permission_set: 'none' })).key
      expectError(await get({ key: none }), 403, 'not-authorized/full-permission-required')
      const restricted = (await makeKey(s, adminId, { path: 'teams' })).key
      expectError(
        await patch({ enabled: false }, { key: restricted }),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
    })

    it('asks for credentials', async () => {
      expectError(await get({}), 401, 'not-authenticated/authentication-required')
      expectError(await patch({ enabled: false }, {}), 401, 'not-authenticated/authentication-required')
      expectError(await get({ key: 'wrong' }), 401, 'not-authenticated/authentication-required')
    })
  })
})
