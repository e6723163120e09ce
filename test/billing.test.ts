import Files from 'files.com/lib/Files.js'
import AccountLineItem from 'files.com/lib/models/AccountLineItem.js'
import Invoice from 'files.com/lib/models/Invoice.js'
import Payment from 'files.com/lib/models/Payment.js'
import { describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../src/identity/principal.js'
import { call, dialects, expectError, login, makeKey, makeUser, type TestServer } from './helpers/server.js'
import { describeError, sdkError, sdkServer } from './sdk/sdk.js'

describe.each(dialects)('billing records (%s)', (dialect) => {
  let s: TestServer
  sdkServer(dialect, (server) => {
    s = server
  })
  const operator = () => operatorPrincipal(s.container.site.id)
  const ledger = () => s.container.services.billingLedger

  async function invoice(amounts: string[], currency = 'USD'): Promise<number> {
    return ledger().createInvoice(operator(), {
      currency,
      lines: amounts.map((amount, i) => ({
        amount,
        description: `Line ${i + 1}`,
        plan: 'Storage',
        service_start_at: '2025-01-01',
        service_end_at: '2025-01-31T23:59:59Z',
      })),
    })
  }

  it('records an invoice whose amount and balance are the exact sum of its lines', async () => {
    const id = await invoice(['10.10', '0.20', '1999.70'])
    const r = await call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      id,
      type: 'invoice',
      amount: 2010,
      balance: 2010,
      currency: 'USD',
      method: null,
      payment_type: null,
      payment_reversed_at: null,
      site_name: 'wharf',
      payment_line_items: [],
    })
    expect(r.body.invoice_line_items).toHaveLength(3)
    expect(r.body.invoice_line_items[0]).toEqual({
      id: expect.any(Number),
      amount: 10.1,
      created_at: expect.stringMatching(/Z$/),
      description: 'Line 1',
      type: 'invoice',
      service_end_at: '2025-01-31T23:59:59Z',
      service_start_at: '2025-01-01T00:00:00Z',
      plan: 'Storage',
      site: 'wharf',
      prepaid_bytes: null,
      prepaid_bytes_expire_at: null,
      prepaid_bytes_used: null,
      prepaid_bytes_available: null,
    })
    expect(r.body.download_uri).toMatch(
      new RegExp(`^${s.url}/api/rest/v1/billing_documents/${id}\\?expires=\\d+&signature=`),
    )
  })

  it('applies a payment to invoices: their balances fall, the rest stays on the payment, an Action records it', async () => {
    const a = await invoice(['30.00'])
    const b = await invoice(['25.50'])
    const pay = await ledger().recordPayment(operator(), {
      currency: 'usd',
      amount: '60.00',
      method: 'card',
      payment_type: 'visa',
      apply: [{ invoice_id: a }, { invoice_id: b, amount: '20.25' }],
    })
    const inv = (id: number) => call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })
    expect((await inv(a)).body.balance).toBe(0)
    expect((await inv(b)).body.balance).toBe(5.25)
    expect((await inv(b)).body.payment_line_items).toEqual([
      { amount: 20.25, created_at: expect.any(String), invoice_id: b, payment_id: pay },
    ])
    const p = await call(s, 'GET', `/payments/${pay}`, { key: s.adminKey })
    expect(p.body).toMatchObject({
      id: pay,
      type: 'payment',
      amount: 60,
      balance: 9.75,
      currency: 'USD',
      method: 'card',
      payment_type: 'visa',
      invoice_line_items: [],
    })
    expect(p.body.payment_line_items.map((x: any) => [x.invoice_id, x.amount])).toEqual([
      [a, 30],
      [b, 20.25],
    ])
    const action = await s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('display', 'like', `Recorded payment #${pay} %`)
      .executeTakeFirstOrThrow()
    expect(action.action).toBe('create')
    expect(JSON.parse(action.targets)).toEqual([
      { type: 'payment', id: pay },
      { type: 'invoice', id: a },
      { type: 'invoice', id: b },
    ])
    // Billing Actions are not file activity: no webhook is queued for them.
    const queued = await s.container.db
      .selectFrom('webhook_notifications')
      .select('id')
      .where('action_id', '=', action.id)
      .execute()
    expect(queued).toEqual([])
  })

  it('refuses to apply more than an invoice owes or than the payment holds, and records nothing', async () => {
    const a = await invoice(['10.00'])
    const before = await s.container.db.selectFrom('account_line_items').select('id').execute()
    const over = ledger().recordPayment(operator(), {
      currency: 'USD',
      amount: '50.00',
      method: 'card',
      apply: [{ invoice_id: a, amount: '10.01' }],
    })
    await expect(over).rejects.toMatchObject({ type: 'processing-failure/model-save-error' })
    await expect(over).rejects.toThrow(/owes USD 10.00/)
    const tooMuch = ledger().recordPayment(operator(), {
      currency: 'USD',
      amount: '5.00',
      method: 'card',
      apply: [{ invoice_id: a, amount: '6.00' }],
    })
    await expect(tooMuch).rejects.toThrow(/only 5.00 is left/)
    const otherCurrency = ledger().recordPayment(operator(), {
      currency: 'EUR',
      amount: '5.00',
      method: 'card',
      apply: [{ invoice_id: a }],
    })
    await expect(otherCurrency).rejects.toThrow(/is in USD/)
    await expect(
      ledger().recordPayment(operator(), { currency: 'USD', amount: '1.001', method: 'card' }),
    ).rejects.toMatchObject({ type: 'bad-request/request-params-invalid' })
    expect(await s.container.db.selectFrom('account_line_items').select('id').execute()).toEqual(before)
    expect((await call(s, 'GET', `/invoices/${a}`, { key: s.adminKey })).body.balance).toBe(10)
  })

  it('keeps currencies without minor units exact (JPY)', async () => {
    const id = await invoice(['1200', '34'], 'JPY')
    expect((await call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })).body.amount).toBe(1234)
    await expect(invoice(['1.5'], 'JPY')).rejects.toThrow(/more decimals than JPY allows/)
  })

  it('serves Invoice.list/find and Payment.list/find through the files.com SDK', async () => {
    const id = await invoice(['7.00'])
    const pay = await ledger().recordPayment(operator(), {
      currency: 'USD',
      amount: '7.00',
      method: 'paypal',
      apply: [{ invoice_id: id }],
    })
    Files.setApiKey(s.adminKey)
    const invoices = await Invoice.list()
    expect(invoices.every((i: AccountLineItem) => i instanceof AccountLineItem && i.type === 'invoice')).toBe(
      true,
    )
    expect(invoices.map((i: any) => i.id)).toContain(id)
    const found = await Invoice.find(id)
    expect(found.getAmount()).toBe(7)
    expect(found.getBalance()).toBe(0)
    expect(found.getSiteName()).toBe('wharf')
    expect(found.getInvoiceLineItems()[0]?.['description']).toBe('Line 1')
    const payments = await Payment.list()
    expect(payments.map((p: any) => p.id)).toContain(pay)
    const p = await Payment.find(pay)
    expect(p.getMethod()).toBe('paypal')
    expect(p.getPaymentLineItems()).toEqual([
      { amount: 7, created_at: expect.any(String), invoice_id: id, payment_id: pay },
    ])
    const missing = await sdkError(Invoice.find(pay))
    expect(describeError(missing)).toMatchObject({ type: 'not-found', httpCode: 404 })
  })

  it('pages with per_page 1 and signed cursors, forward and back', async () => {
    await invoice(['1.00'])
    await invoice(['2.00'])
    const all = (await call(s, 'GET', '/invoices', { key: s.adminKey })).body.map((i: any) => i.id)
    expect(all.length).toBeGreaterThanOrEqual(2)
    const seen: number[] = []
    let cursor = ''
    for (;;) {
      const r = await call(s, 'GET', `/invoices?per_page=1${cursor ? `&cursor=${cursor}` : ''}`, {
        key: s.adminKey,
      })
      expect(r.status).toBe(200)
      expect(r.body).toHaveLength(1)
      seen.push(r.body[0].id)
      const next = r.headers.get('x-files-cursor-next')
      if (!next) break
      cursor = encodeURIComponent(next)
    }
    expect(seen).toEqual(all)
    const bad = await call(s, 'GET', `/payments?cursor=${cursor}`, { key: s.adminKey })
    expectError(bad, 400, 'bad-request/invalid-cursor')
    expectError(
      await call(s, 'GET', '/invoices?per_page=0', { key: s.adminKey }),
      400,
      'bad-request/request-params-invalid',
    )
  })

  it('renders XML with the account-line-item roots and typed nested arrays', async () => {
    const id = await invoice(['12.50', '0.25'])
    const one = await call(s, 'GET', `/invoices/${id}.xml`, { key: s.adminKey })
    expect(one.status).toBe(200)
    expect(one.headers.get('content-type')).toMatch(/^application\/xml/)
    expect(one.text).toContain('<account-line-item>')
    expect(one.text).toContain('<amount type="float">12.75</amount>')
    expect(one.text).toMatch(/<invoice_line_items type="array">\s*<invoice_line_item>/)
    expect(one.text).toContain('<payment_line_items type="array"/>')
    expect(one.text).toContain('<method nil="true"/>')
    const list = await call(s, 'GET', '/payments', { key: s.adminKey, accept: 'application/xml' })
    expect(list.text).toMatch(/<account-line-items type="array"[\s/>]/)
    // A whole amount is still a double.
    const whole = await call(s, 'GET', `/invoices/${await invoice(['2010.00'])}.xml`, { key: s.adminKey })
    expect(whole.text).toContain('<amount type="float">2010</amount>')
    expect(whole.text).toContain('<balance type="float">2010</balance>')
    expect(whole.text).not.toContain('<amount type="integer">')
  })

  it('answers 404 for unknown ids, an invoice asked for as a payment, and 400 for bad ids', async () => {
    const id = await invoice(['1.00'])
    expectError(await call(s, 'GET', '/invoices/999999', { key: s.adminKey }), 404, 'not-found')
    expectError(await call(s, 'GET', `/payments/${id}`, { key: s.adminKey }), 404, 'not-found')
    for (const bad of ['abc', '-1', '0', '99999999999999999999']) {
      expectError(
        await call(s, 'GET', `/invoices/${bad}`, { key: s.adminKey }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'GET', `/payments/${bad}`, { key: s.adminKey }),
        400,
        'bad-request/request-params-invalid',
      )
    }
  })

  it('is open to every authenticated key or session, but not to permission set none or no credentials', async () => {
    const id = await invoice(['3.00'])
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    expect((await call(s, 'GET', `/invoices/${id}`, { session })).status).toBe(200)
    const desktop = await makeKey(s, u.id, { permission_set: 'desktop_app' })
    expect((await call(s, 'GET', '/invoices', { key: desktop.key })).status).toBe(200)
    const none = await makeKey(s, u.id, { permission_set: 'none' })
    expectError(
      await call(s, 'GET', '/payments', { key: none.key }),
      403,
      'not-authorized/full-permission-required',
    )
    expectError(await call(s, 'GET', '/invoices'), 401, 'not-authenticated/authentication-required')
  })

  it('streams a PDF from the signed download_uri without credentials, and refuses a tampered or expired link', async () => {
    const id = await invoice(['99.99'])
    const pay = await ledger().recordPayment(operator(), {
      currency: 'USD',
      amount: '50.00',
      method: 'card',
      apply: [{ invoice_id: id }],
    })
    for (const path of [`/invoices/${id}`, `/payments/${pay}`]) {
      const uri: string = (await call(s, 'GET', path, { key: s.adminKey })).body.download_uri
      const res = await fetch(uri)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/pdf')
      const bytes = Buffer.from(await res.arrayBuffer())
      expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-')
      expect(bytes.subarray(-6).toString('latin1')).toMatch(/%%EOF/)
    }
    const uri: string = (await call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })).body.download_uri
    const u = new URL(uri)
    const refused = async (href: string) => {
      const r = await fetch(href)
      expect(r.status).toBe(401)
      expect(((await r.json()) as any).type).toBe('not-authenticated/invalid-or-expired-code')
    }
    // Another record's id under this signature.
    await refused(uri.replace(`/billing_documents/${id}?`, `/billing_documents/${pay}?`))
    const sig = u.searchParams.get('signature')!
    const flipped = `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`
    await refused(uri.replace(sig, flipped))
    const expires = u.searchParams.get('expires')!
    await refused(uri.replace(`expires=${expires}`, `expires=${Number(expires) + 60}`))
    await refused(uri.replace(`expires=${expires}`, 'expires=1000'))
    await refused(`${s.api}/billing_documents/${id}`)
  })
})
