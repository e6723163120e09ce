import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

let servers: ServerProcesses
const sites: ProcessSite[] = []

beforeAll(async () => {
  servers = serverProcesses()
}, 120_000)

afterAll(async () => {
  await servers?.killAll()
  for (const s of sites) await s.remove()
})

describe.each(dialects)('wharf billing (%s)', (dialect) => {
  let site: ProcessSite
  beforeAll(async () => {
    site = await processSite(servers, dialect)
    sites.push(site)
  }, 60_000)

  const wharf = (args: string[]) => servers.wharf(['billing', ...args], site.env())
  /** A command that must fail: its exit code and what it printed on stderr. */
  const refused = async (args: string[]) => {
    try {
      await wharf(args)
    } catch (err) {
      const e = err as { code: number; stderr: string }
      return { code: e.code, stderr: e.stderr }
    }
    throw new Error(`wharf billing ${args.join(' ')} succeeded`)
  }

  it('records an invoice, then a payment applied to it that lowers its balance, each with an Action', async () => {
    const inv = JSON.parse(
      (
        await wharf([
          'invoice',
          '--currency',
          'EUR',
          '--line',
          '40.00:Storage, March',
          '--line',
          '9.95:Transfer, March',
          '--plan',
          'Business',
          '--from',
          '2025-03-01',
          '--to',
          '2025-03-31T23:59:59Z',
        ])
      ).stdout,
    )
    expect(inv).toMatchObject({ type: 'invoice', amount: 49.95, balance: 49.95, currency: 'EUR' })
    expect(
      inv.invoice_line_items.map((l: any) => [l.amount, l.description, l.plan, l.service_start_at]),
    ).toEqual([
      [40, 'Storage, March', 'Business', '2025-03-01T00:00:00Z'],
      [9.95, 'Transfer, March', 'Business', '2025-03-01T00:00:00Z'],
    ])

    const pay = JSON.parse(
      (
        await wharf([
          'payment',
          '--currency',
          'EUR',
          '--amount',
          '30.00',
          '--method',
          'bank_transfer',
          '--apply',
          String(inv.id),
        ])
      ).stdout,
    )
    expect(pay).toMatchObject({ type: 'payment', amount: 30, balance: 0, method: 'bank_transfer' })
    expect(pay.payment_line_items).toEqual([
      { amount: 30, created_at: expect.any(String), invoice_id: inv.id, payment_id: pay.id },
    ])
    const row = await site.db.db
      .selectFrom('account_line_items')
      .select('balance_minor')
      .where('id', '=', inv.id)
      .executeTakeFirstOrThrow()
    expect(row.balance_minor).toBe(1995)

    const actions = await site.db.db
      .selectFrom('actions')
      .select(['action', 'targets', 'display', 'interface'])
      .where('display', 'like', 'Recorded %')
      .orderBy('id')
      .execute()
    expect(actions).toEqual([
      {
        action: 'create',
        targets: JSON.stringify([{ type: 'invoice', id: inv.id }]),
        display: `Recorded invoice #${inv.id} for EUR 49.95`,
        interface: 'robot',
      },
      {
        action: 'create',
        targets: JSON.stringify([
          { type: 'payment', id: pay.id },
          { type: 'invoice', id: inv.id },
        ]),
        display: `Recorded payment #${pay.id} of EUR 30.00 applied to invoice #${inv.id}`,
        interface: 'robot',
      },
    ])

    // 19.95 is still owed: applying 20.00 overpays the invoice and is refused, nothing recorded.
    const over = await refused([
      'payment',
      '--currency',
      'EUR',
      '--amount',
      '50',
      '--method',
      'card',
      '--apply',
      `${inv.id}:20.00`,
    ])
    expect(over.code).toBe(1)
    expect(over.stderr).toContain(
      `error: processing-failure/model-save-error: Invoice #${inv.id} owes EUR 19.95: applying 20.00 would overpay it`,
    )
    const payments = await site.db.db
      .selectFrom('account_line_items')
      .select('id')
      .where('type', '=', 'payment')
      .execute()
    expect(payments).toHaveLength(1)
  }, 60_000)

  it('explains a malformed line or application', async () => {
    const line = await refused(['invoice', '--currency', 'USD', '--line', '12.00'])
    expect(line.code).toBe(1)
    expect(line.stderr).toContain('must be AMOUNT:DESCRIPTION')
    const apply = await refused([
      'payment',
      '--currency',
      'USD',
      '--amount',
      '1',
      '--method',
      'card',
      '--apply',
      'x',
    ])
    expect(apply.stderr).toContain('must be INVOICE_ID or INVOICE_ID:AMOUNT')
  }, 60_000)

  it('refuses prepaid bytes that are not digits, and their expiry without them', async () => {
    const line = ['invoice', '--currency', 'USD', '--line', '12.00:Storage']
    for (const bytes of [' ', '1e3', '0x10']) {
      const r = await refused([...line, '--prepaid-bytes', bytes])
      expect(r.code).toBe(1)
      expect(r.stderr).toContain('must be a whole number of bytes')
    }
    const expiry = await refused([...line, '--prepaid-bytes-expire-at', '2030-01-01'])
    expect(expiry.code).toBe(1)
    expect(expiry.stderr).toContain('--prepaid-bytes-expire-at needs --prepaid-bytes')
  }, 60_000)

  it('reverses a payment: the invoices owe again exactly what it took, once, with an Action', async () => {
    const invoice = async (line: string) =>
      JSON.parse((await wharf(['invoice', '--currency', 'USD', '--line', line])).stdout).id as number
    const a = await invoice('100.00:Storage, April')
    const b = await invoice('25.50:Transfer, April')
    const pay = JSON.parse(
      (
        await wharf([
          'payment',
          '--currency',
          'USD',
          '--amount',
          '80.00',
          '--method',
          'card',
          '--apply',
          `${a}:40.25`,
          '--apply',
          String(b),
        ])
      ).stdout,
    )
    expect(pay).toMatchObject({ amount: 80, balance: 14.25, payment_reversed_at: null })
    const balances = async () =>
      (
        await site.db.db
          .selectFrom('account_line_items')
          .select(['id', 'balance_minor'])
          .where('id', 'in', [a, b, pay.id])
          .orderBy('id')
          .execute()
      ).map((r) => [r.id, r.balance_minor])
    expect(await balances()).toEqual([
      [a, 5975],
      [b, 0],
      [pay.id, 1425],
    ])

    const printed = JSON.parse((await wharf(['reverse-payment', '--id', String(pay.id)])).stdout)
    expect(printed).toMatchObject({ id: pay.id, type: 'payment', amount: 80, balance: 0 })
    expect(await balances()).toEqual([
      [a, 10000],
      [b, 2550],
      [pay.id, 0],
    ])

    const server = await servers.serve(site.env())
    const res = await fetch(`${server.api}/payments/${pay.id}`, { headers: { 'X-FilesAPI-Key': site.key } })
    expect(res.status).toBe(200)
    const got = (await res.json()) as any
    expect(got.payment_reversed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
    expect(got.payment_reversed_at).toBe(printed.payment_reversed_at)
    expect(got.balance).toBe(0)
    // The applications stay, as the history of what the payment once settled.
    expect(got.payment_line_items.map((l: any) => [l.invoice_id, l.amount])).toEqual([
      [a, 40.25],
      [b, 25.5],
    ])

    const again = await refused(['reverse-payment', '--id', String(pay.id)])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(
      `error: processing-failure/model-save-error: Payment #${pay.id} was already reversed at ${printed.payment_reversed_at}`,
    )
    expect(await balances()).toEqual([
      [a, 10000],
      [b, 2550],
      [pay.id, 0],
    ])

    const actions = await site.db.db
      .selectFrom('actions')
      .select(['action', 'targets', 'display', 'interface'])
      .where('display', 'like', 'Reversed %')
      .execute()
    expect(actions).toEqual([
      {
        action: 'create',
        targets: JSON.stringify([
          { type: 'payment', id: pay.id },
          { type: 'invoice', id: a },
          { type: 'invoice', id: b },
        ]),
        display: `Reversed payment #${pay.id} of USD 80.00, given back to invoice #${a}, #${b}`,
        interface: 'robot',
      },
    ])
  }, 60_000)

  it('refuses to reverse an unknown id or an invoice', async () => {
    const unknown = await refused(['reverse-payment', '--id', '999999'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('error: not-found: No payment with id 999999')
    const inv = JSON.parse((await wharf(['invoice', '--currency', 'USD', '--line', '5.00:Support'])).stdout)
    const asInvoice = await refused(['reverse-payment', '--id', String(inv.id)])
    expect(asInvoice.code).toBe(1)
    expect(asInvoice.stderr).toContain(`error: not-found: #${inv.id} is an invoice, not a payment`)
    const row = await site.db.db
      .selectFrom('account_line_items')
      .select(['balance_minor', 'payment_reversed_at'])
      .where('id', '=', inv.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ balance_minor: 500, payment_reversed_at: null })
    const malformed = await refused(['reverse-payment', '--id', 'x'])
    expect(malformed.code).toBe(1)
    expect(malformed.stderr).toContain('must be a payment id')
  }, 60_000)
})
