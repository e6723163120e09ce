import { describe, expect, it } from 'vitest'
import { call, dialects, expectError, useServer } from './helpers/server.js'

/**
 * A listener URL whose host is a literal IP address is judged when it is saved, by the same guard
 * that vets addresses at delivery: an address a webhook could never be sent to is refused then,
 * not accepted to fail at every delivery. Nothing here sends traffic anywhere: refused URLs are
 * never stored, and the accepted ones are saved with webhooks disabled.
 */
describe.each(dialects)('listener addresses checked when saved (%s)', (dialect) => {
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })

  const patch = (body: unknown) => call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body })
  const settings = async () => (await call(s, 'GET', '/webhook_settings', { key: s.adminKey })).body
  const settingsActions = () =>
    s.container.db
      .selectFrom('actions')
      .select('id')
      .where('action', '=', 'update')
      .where('targets', 'like', '%webhook_settings%')
      .execute()

  it.each([
    ['loopback outside the allowed range', 'http://127.0.0.2:9/hook', '127.0.0.2'],
    ['loopback written as one number', 'http://2130706434/hook', '127.0.0.2'],
    ['loopback written in hex', 'http://0x7f.0.0.3/hook', '127.0.0.3'],
    ['a private address', 'http://10.0.0.1/hook', '10.0.0.1'],
    ['a private address (192.168/16)', 'https://192.168.1.20:8443/hook', '192.168.1.20'],
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['the unspecified address', 'http://0.0.0.0:80/hook', '0.0.0.0'],
    ['carrier-grade NAT', 'http://100.64.0.1/hook', '100.64.0.1'],
    ['IPv6 loopback', 'http://[::1]:9/hook', '::1'],
    ['IPv6 link-local', 'http://[fe80::1]/hook', 'fe80::1'],
    ['IPv6 unique-local', 'http://[fd00::1]/hook', 'fd00::1'],
    ['IPv6 unspecified', 'http://[::]/hook', '::'],
    ['IPv4-mapped private', 'http://[::ffff:10.0.0.1]/hook', '::ffff:a00:1'],
    ['IPv4-mapped loopback outside the range', 'http://[::ffff:127.0.0.2]/hook', '::ffff:7f00:2'],
  ])('refuses %s with 422 on url, storing nothing', async (_label, url, shown) => {
    const before = await settings()
    const actions = (await settingsActions()).length
    const r = await patch({ url, triggers: ['Upload'], enabled: true })
    expectError(r, 422, 'processing-failure/model-save-error')
    expect(Object.keys(r.body.model_errors)).toEqual(['url'])
    expect(r.body.model_errors.url).toEqual([
      `must not point to ${shown}: webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS`,
    ])
    expect(await settings()).toEqual(before)
    expect(await settingsActions()).toHaveLength(actions)
  })

  it('takes literal addresses the guard allows, and host names, which are vetted at delivery', async () => {
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://[::ffff:127.0.0.1]:9/hook',
      'https://1.1.1.1/hook',
      'https://[2606:4700:4700::1111]/hook',
      'https://hooks.example.com/hook',
      'http://localhost:9/hook',
    ]) {
      const r = await patch({ url, enabled: false })
      expect({ url, status: r.status, saved: r.body?.url }).toEqual({ url, status: 200, saved: url })
    }
  })
})
