import Files from 'files.com/lib/Files.js'
import Session from 'files.com/lib/models/Session.js'
import Site from 'files.com/lib/models/Site.js'
import User from 'files.com/lib/models/User.js'
import { afterEach, describe, expect, it } from 'vitest'
import { dialects, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: Site password rules (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })
  afterEach(async () => {
    Files.setSessionId(null)
    Files.setApiKey(s.adminKey)
    await Site.update({ password_min_length: 8, password_require_number: false, max_prior_passwords: 0 })
  })

  it('reads and changes the rules with Site.get and Site.update; User.create then meets them', async () => {
    Files.setApiKey(s.adminKey)
    const site = await Site.get()
    expect(site).toBeInstanceOf(Site)
    expect(site.password_min_length).toBe(8)
    expect(site.password_require_number).toBe(false)
    expect(site.password_validity_days).toBeNull()

    const changed = await Site.update({
      password_min_length: 12,
      password_require_number: true,
      max_prior_passwords: 2,
    })
    expect(rec.requests.at(-1)!.method).toBe('PATCH')
    expect(rec.requests.at(-1)!.url).toBe('/api/rest/v1/site')
    expect(changed.password_min_length).toBe(12)
    expect(changed.password_require_number).toBe(true)
    expect(changed.max_prior_passwords).toBe(2)

    const err = await sdkError(User.create({ username: 'sdk-short', password: 'short-word' }))
    expect(describeError(err)).toMatchObject({ type: 'processing-failure/model-save-error', httpCode: 422 })
    expect(err.message).toBe('Password is too short (minimum is 12 characters)')
    const ok = await User.create({ username: 'sdk-long', password: 'letters-and-1-digit' })
    expect(ok.id).toEqual(expect.any(Number))
  })

  it('shows Site.get to every user, and refuses Site.update to a user who is not a site admin', async () => {
    const u = await makeUser(s)
    Files.setApiKey((await makeKey(s, u.id)).key)
    expect((await Site.get()).attributes['password_min_length']).toBe(8)
    expect(describeError(await sdkError(Site.update({ password_min_length: 20 })))).toMatchObject({
      type: 'not-authorized/site-admin-required',
      httpCode: 403,
    })
  })

  it('changes the billing contact with Site.update only with billing_permission', async () => {
    const admin = await makeUser(s, { site_admin: true })
    Files.setApiKey((await makeKey(s, admin.id)).key)
    expect(describeError(await sdkError(Site.update({ contact_name: 'Ada Billing' })))).toEqual({
      className: 'NotAuthorized_BillingPermissionRequiredError',
      type: 'not-authorized/billing-permission-required',
      httpCode: 403,
    })
    const payer = await makeUser(s)
    await User.find(payer.id, {}, { apiKey: s.adminKey }).then((u) => u.update({ billing_permission: true }))
    Files.setApiKey((await makeKey(s, payer.id)).key)
    const changed = await Site.update({ contact_name: 'Ada Billing', phone: '555-0100' })
    expect([changed.contact_name, changed.phone, changed.email]).toEqual(['Ada Billing', '555-0100', null])
    expect((await Site.get()).contact_name).toBe('Ada Billing')
  })

  it('holds a session to the password change set by require_password_change, until user.update sets one', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const flagged = await (await User.find(u.id)).update({ require_password_change: true })
    expect(flagged.attributes['require_password_change']).toBe(true)

    Files.setApiKey(undefined)
    const session = await Session.create({ username: u.username, password: u.password })
    Files.setSessionId(session.id)
    expect(describeError(await sdkError(User.list()))).toMatchObject({
      type: 'not-authorized/password-change-required',
      httpCode: 403,
    })
    const me = await User.find(
      u.id,
      {},
      { headers: { 'X-Files-Reauthentication': `password:${u.password}` } },
    )
    const updated = await me.update({ password: 'sdk-new-password-1' })
    expect(updated.attributes['require_password_change']).toBe(false)
    expect((await User.list()).map((x) => x.id)).toEqual([u.id])
  })
})
