import { describe, expect, it } from 'vitest'
import { ApiError } from '../src/api/errors.js'
import { operatorPrincipal } from '../src/identity/principal.js'
import { call, dialects, useServer } from './helpers/server.js'

describe.each(dialects)('invoice totals (%s)', (dialect) => {
  const s = useServer(dialect)

  const operator = () => operatorPrincipal(s.container.site.id)
  const ledger = () => s.container.services.billingLedger
  const max = '10000000000000.00'

  it('refuses an invoice whose lines add up to more than one amount may be, recording nothing', async () => {
    // 10 × 10^15 + 1 minor units is past Number.MAX_SAFE_INTEGER: the total would lose the cent.
    const lines = [...Array.from({ length: 10 }, (_, i) => ({ amount: max, description: `Line ${i}` }))]
    lines.push({ amount: '0.01', description: 'The cent' })
    const before = await s.container.db.selectFrom('account_line_items').select('id').execute()
    const err = await ledger()
      .createInvoice(operator(), { currency: 'USD', lines })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).type).toBe('bad-request/request-params-invalid')
    expect((err as ApiError).message).toMatch(/total must be at most USD 10000000000000\.00/)
    const after = await s.container.db.selectFrom('account_line_items').select('id').execute()
    expect(after).toHaveLength(before.length)
  })

  it('refuses an expiry of prepaid bytes on a line without prepaid bytes', async () => {
    const err = await ledger()
      .createInvoice(operator(), {
        currency: 'USD',
        lines: [{ amount: '5.00', description: 'Storage', prepaid_bytes_expire_at: '2030-01-01T00:00:00Z' }],
      })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).type).toBe('bad-request/request-params-invalid')
    expect((err as ApiError).message).toBe('line 1: an expiry of prepaid bytes needs prepaid bytes')
  })

  it('takes an invoice whose total is exactly the largest amount', async () => {
    const id = await ledger().createInvoice(operator(), {
      currency: 'USD',
      lines: [
        { amount: '9999999999999.99', description: 'Almost all' },
        { amount: '0.01', description: 'The rest' },
      ],
    })
    const res = await call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })
    expect(res.status).toBe(200)
    expect(res.body.amount).toBe(10_000_000_000_000)
    expect(res.body.balance).toBe(10_000_000_000_000)
  })
})

describe.each(dialects)('ledger constraints (%s)', (dialect) => {
  const s = useServer(dialect)

  it('refuses in the database a balance below zero or above the amount', async () => {
    const id = await s.container.services.billingLedger.createInvoice(
      operatorPrincipal(s.container.site.id),
      {
        currency: 'USD',
        lines: [{ amount: '10.00', description: 'Storage' }],
      },
    )
    for (const balance of [-1, 1001]) {
      await expect(
        s.container.db
          .updateTable('account_line_items')
          .set({ balance_minor: balance })
          .where('id', '=', id)
          .execute(),
      ).rejects.toThrow(/check constraint|CHECK constraint/i)
    }
    const res = await call(s, 'GET', `/invoices/${id}`, { key: s.adminKey })
    expect(res.body.balance).toBe(10)
  })
})
