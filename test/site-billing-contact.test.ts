import { describe, expect, it } from 'vitest'
import {
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestServer,
  useServer,
} from './helpers/server.js'

const CONTACT = ['contact_name', 'phone', 'email']

/** A user made through the API by a site admin, with these fields, and an API key of theirs. */
async function userWith(
  s: TestServer,
  fields: Record<string, unknown>,
): Promise<{ id: number; key: string }> {
  const u = await makeUser(s)
  const r = await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: fields })
  expect(r.status, r.text).toBe(200)
  return { id: u.id, key: (await makeKey(s, u.id)).key }
}

/** The site's billing contact (GET/PATCH /site), which `billing_permission` governs. */
describe.each(dialects)('the billing contact of the site (%s)', (dialect) => {
  const s = useServer(dialect)

  it('is changed by users with billing_permission, site admins among them, and by site-wide keys', async () => {
    const admin = await userWith(s, { site_admin: true, billing_permission: true })
    const r = await call(s, 'PATCH', '/site', {
      key: admin.key,
      body: { contact_name: ' Ada Billing ', phone: '+41 44 000 00 00', email: 'billing@example.com' },
    })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({
      contact_name: 'Ada Billing',
      phone: '+41 44 000 00 00',
      email: 'billing@example.com',
    })
    const history = await call(s, 'GET', '/history', { key: s.adminKey })
    expect(history.body.map((a: { display: string }) => a.display)).toContainEqual(
      expect.stringContaining("changed the site's billing contact (contact_name, phone, email)"),
    )
    // Blank is none.
    const siteWide = (await makeKey(s, null)).key
    const cleared = await call(s, 'PATCH', '/site', { key: siteWide, body: { phone: '  ' } })
    expect(cleared.status, cleared.text).toBe(200)
    expect(cleared.body.phone).toBeNull()
    const xml = await call(s, 'GET', '/site.xml', { key: admin.key })
    expect(xml.text).toContain('<contact_name>Ada Billing</contact_name>')
  })

  it('refuses a site admin without billing_permission: 403 billing-permission-required, nothing saved', async () => {
    const admin = await userWith(s, { site_admin: true })
    const before = (await call(s, 'GET', '/site', { key: admin.key })).body
    for (const key of CONTACT) expect(before).toHaveProperty(key)
    expectError(
      await call(s, 'PATCH', '/site', { key: admin.key, body: { contact_name: 'Not Allowed' } }),
      403,
      'not-authorized/billing-permission-required',
    )
    // Mixed with the settings a site admin may change, the whole request is refused.
    expectError(
      await call(s, 'PATCH', '/site', { key: admin.key, body: { password_min_length: 20, phone: '1' } }),
      403,
      'not-authorized/billing-permission-required',
    )
    const after = (await call(s, 'GET', '/site', { key: admin.key })).body
    expect([after.contact_name, after.phone, after.password_min_length]).toEqual([
      before.contact_name,
      before.phone,
      before.password_min_length,
    ])
    // The settings alone are theirs to change.
    const rules = await call(s, 'PATCH', '/site', { key: admin.key, body: { password_min_length: 9 } })
    expect(rules.status, rules.text).toBe(200)
    await call(s, 'PATCH', '/site', { key: admin.key, body: { password_min_length: 8 } })
  })

  it('lets a user with billing_permission alone read and change only the contact', async () => {
    const payer = await userWith(s, { billing_permission: true })
    const shown = await call(s, 'GET', '/site', { key: payer.key })
    for (const key of CONTACT) expect(shown.body).toHaveProperty(key)
    expect(shown.body).not.toHaveProperty('allowed_ips')
    const r = await call(s, 'PATCH', '/site', { key: payer.key, body: { phone: '555-0100' } })
    expect(r.status, r.text).toBe(200)
    expect(r.body.phone).toBe('555-0100')
    expect(r.body).not.toHaveProperty('allowed_ips')
    // Anything else still needs a site admin, and nothing of the request is saved.
    expectError(
      await call(s, 'PATCH', '/site', {
        key: payer.key,
        body: { phone: '555-0199', password_min_length: 12 },
      }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'PATCH', '/site', { key: payer.key, body: { allowed_ips: '127.0.0.1' } }),
      403,
      'not-authorized/site-admin-required',
    )
    expect((await call(s, 'GET', '/site', { key: payer.key })).body.phone).toBe('555-0100')
    // A bad address is the field's error.
    const bad = await call(s, 'PATCH', '/site', { key: payer.key, body: { email: 'not an address' } })
    expectError(bad, 422, 'processing-failure/model-save-error')
  })

  it('hides the contact from users without billing_permission and refuses their changes', async () => {
    const u = await makeUser(s)
    const key = (await makeKey(s, u.id)).key
    const shown = await call(s, 'GET', '/site', { key })
    expect(shown.status).toBe(200)
    for (const k of CONTACT) expect(shown.body).not.toHaveProperty(k)
    expectError(
      await call(s, 'PATCH', '/site', { key, body: { contact_name: 'Me' } }),
      403,
      'not-authorized/billing-permission-required',
    )
    // Invoices and payments stay readable by every key, as the spec has it.
    expect((await call(s, 'GET', '/invoices', { key })).status).toBe(200)
    expect((await call(s, 'GET', '/payments', { key })).status).toBe(200)
  })

  it('shows read-only site admins the configuration without the contact, unless billing_permission', async () => {
    const auditor = await makeUser(s)
    const r = await call(s, 'PATCH', `/users/${auditor.id}`, {
      key: s.adminKey,
      body: { readonly_site_admin: true },
    })
    expect(r.status).toBe(200)
    const session = await login(s, auditor.username, auditor.password)
    const shown = await call(s, 'GET', '/site', { session })
    expect(shown.body).toHaveProperty('allowed_ips')
    for (const k of CONTACT) expect(shown.body).not.toHaveProperty(k)
    expectError(
      await call(s, 'PATCH', '/site', { session, body: { contact_name: 'Audit' } }),
      403,
      'not-authorized/read-only-session',
    )
    await call(s, 'PATCH', `/users/${auditor.id}`, { key: s.adminKey, body: { billing_permission: true } })
    const withBilling = await call(s, 'GET', '/site', { session })
    for (const k of CONTACT) expect(withBilling.body).toHaveProperty(k)
    expectError(
      await call(s, 'PATCH', '/site', { session, body: { contact_name: 'Audit' } }),
      403,
      'not-authorized/read-only-session',
    )
  })
})
