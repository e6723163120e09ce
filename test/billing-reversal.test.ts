import { describe, expect, it } from 'vitest'
import { ApiError } from '../src/api/errors.js'
import { operatorPrincipal } from '../src/identity/principal.js'
import { call, dialects, useServer } from './helpers/server.js'

describe.each(dialects)('payment reversal (%s)', (dialect) => {
  const s = useServer(dialect)

  const operator = () => operatorPrincipal(s.container.site.id)
  const ledger = () => s.container.services.billingLedger

  it('lets only one of several reversals of one payment at once succeed', async () => {
    for (let round = 0; round < 5; round++) {
      const inv = await ledger().createInvoice(operator(), {
        currency: 'USD',
        lines: [{ amount: '30.00', description: `Storage, round ${round}` }],
      })
      const pay = await ledger().recordPayment(operator(), {
        currency: 'USD',
        amount: '30.00',
        method: 'card',
        apply: [{ invoice_id: inv, amount: '12.34' }],
      })
      const results = await Promise.allSettled([1, 2, 3].map(() => ledger().reversePayment(operator(), pay)))
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      for (const r of results.filter((r) => r.status === 'rejected')) {
        const err = (r as PromiseRejectedResult).reason
        expect(err).toBeInstanceOf(ApiError)
        expect((err as ApiError).type).toBe('processing-failure/model-save-error')
      }
      // Given back once: 30.00 − 12.34 + 12.34, not + 3 × 12.34.
      const i = await call(s, 'GET', `/invoices/${inv}`, { key: s.adminKey })
      expect(i.body.balance).toBe(30)
      const p = await call(s, 'GET', `/payments/${pay}`, { key: s.adminKey })
      expect(p.status).toBe(200)
      expect(p.body.balance).toBe(0)
      expect(p.body.payment_reversed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
    }
    const reversals = await s.container.db
      .selectFrom('actions')
      .select('id')
      .where('display', 'like', 'Reversed payment %')
      .execute()
    expect(reversals).toHaveLength(5)
  })

  it('refuses through the ledger an unknown id and an invoice id with 404', async () => {
    const inv = await ledger().createInvoice(operator(), {
      currency: 'EUR',
      lines: [{ amount: '1.00', description: 'Support' }],
    })
    for (const id of [inv, 999_999]) {
      const err = await ledger()
        .reversePayment(operator(), id)
        .then(() => undefined)
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ApiError)
      expect((err as ApiError).type).toBe('not-found')
    }
  })
})
