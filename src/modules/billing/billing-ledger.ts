import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import type { ApiError } from '../../api/errors.js'
import type { Principal } from '../../identity/principal.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { BillingRepository } from './billing-repository.js'
import { MAX_MINOR, parseAmount, parseCurrency, toDecimal } from './money.js'

/** One line of a new invoice; amounts are decimal text ("49.90") so nothing is rounded on the way. */
export interface NewInvoiceLine {
  amount: string
  description: string
  plan?: string | undefined
  service_start_at?: string | undefined
  service_end_at?: string | undefined
  prepaid_bytes?: number | undefined
  prepaid_bytes_expire_at?: string | undefined
}

export interface NewInvoice {
  currency: string
  lines: NewInvoiceLine[]
}

export interface NewPayment {
  currency: string
  amount: string
  method: string
  payment_type?: string | undefined
  /** Invoices the payment settles; an application without amount takes what the invoice still owes. */
  apply?: { invoice_id: number; amount?: string | undefined }[]
}

const invalid = (message: string) => ERRORS.requestParamsInvalid(message)

/**
 * How operators record billing (the `wharf billing` commands): invoices with their lines, and
 * payments applied to invoices. Each is one transaction with its Action (`create`, targets naming
 * the records), so the history never tells of a record that does not exist.
 */
export class BillingLedger {
  constructor(
    private readonly billing: BillingRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records an invoice; its amount and starting balance are the sum of its lines. Returns its id. */
  async createInvoice(p: Principal, input: NewInvoice): Promise<number> {
    const currency = parseCurrency(input.currency)
    if (input.lines.length === 0) throw invalid('An invoice needs at least one line')
    const lines = input.lines.map((l, i) => {
      const what = `line ${i + 1}`
      if (!l.description.trim()) throw invalid(`${what}: a description is required`)
      const start = l.service_start_at ? parseDateTime(l.service_start_at, `${what} service start`) : null
      const end = l.service_end_at ? parseDateTime(l.service_end_at, `${what} service end`) : null
      if (start !== null && end !== null && end < start)
        throw invalid(`${what}: the service ends before it starts`)
      if (l.prepaid_bytes !== undefined && (!Number.isSafeInteger(l.prepaid_bytes) || l.prepaid_bytes < 0))
        throw invalid(`${what}: prepaid bytes must be a whole number`)
      if (l.prepaid_bytes_expire_at && l.prepaid_bytes === undefined)
        throw invalid(`${what}: an expiry of prepaid bytes needs prepaid bytes`)
      return {
        amount_minor: parseAmount(l.amount, currency, `${what} amount`),
        description: l.description.trim(),
        plan: l.plan?.trim() || null,
        service_start_at: start,
        service_end_at: end,
        prepaid_bytes: l.prepaid_bytes ?? null,
        prepaid_bytes_expire_at: l.prepaid_bytes_expire_at
          ? parseDateTime(l.prepaid_bytes_expire_at, `${what} prepaid bytes expiry`)
          : null,
      }
    })
    const total = lines.reduce((sum, l) => sum + l.amount_minor, 0)
    if (total > MAX_MINOR)
      throw invalid(`The invoice's total must be at most ${currency} ${toDecimal(MAX_MINOR, currency)}`)
    const now = this.now()
    return this.billing.transaction(async (tx) => {
      const id = await tx.insertItem({
        site_id: p.siteId,
        type: 'invoice',
        currency,
        amount_minor: total,
        balance_minor: total,
        method: null,
        payment_type: null,
        payment_reversed_at: null,
        created_at: now,
        updated_at: now,
      })
      await tx.insertInvoiceLines(
        lines.map((l) => ({ ...l, site_id: p.siteId, invoice_id: id, created_at: now })),
      )
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'create',
          display: `Recorded invoice #${id} for ${currency} ${toDecimal(total, currency)}`,
          targets: [{ type: 'invoice', id }],
        },
        now,
      )
      return id
    })
  }

  /**
   * Records a payment and applies it to invoices, lowering their balances; what is not applied
   * stays as the payment's balance. Applying more than the payment or more than an invoice owes
   * is refused (422 model-save-error) and nothing is recorded. Returns the payment's id.
   */
  async recordPayment(p: Principal, input: NewPayment): Promise<number> {
    const currency = parseCurrency(input.currency)
    const amount = parseAmount(input.amount, currency)
    const method = input.method.trim()
    if (!method) throw invalid('A payment method is required (e.g. card, bank_transfer, paypal)')
    const wanted = input.apply ?? []
    const seen = new Set<number>()
    for (const a of wanted) {
      if (seen.has(a.invoice_id)) throw invalid(`Invoice #${a.invoice_id} is named twice`)
      seen.add(a.invoice_id)
    }
    const now = this.now()
    return this.billing.transaction(async (tx) => {
      let left = amount
      const applied: { invoice_id: number; amount_minor: number }[] = []
      for (const a of wanted) {
        const inv = await tx.findInvoice(p.siteId, a.invoice_id)
        if (!inv) throw ERRORS.notFound(`No invoice with id ${a.invoice_id}`)
        if (inv.currency !== currency)
          throw overApplied(`Invoice #${inv.id} is in ${inv.currency}, the payment in ${currency}`)
        const part =
          a.amount !== undefined
            ? parseAmount(a.amount, currency, `amount applied to invoice #${inv.id}`)
            : Math.min(inv.balance_minor, left)
        if (part <= 0) throw overApplied(`Nothing left to apply to invoice #${inv.id}`)
        if (part > left)
          throw overApplied(
            `The payment of ${currency} ${toDecimal(amount, currency)} cannot cover ${currency} ${toDecimal(part, currency)} more on invoice #${inv.id}: only ${toDecimal(left, currency)} is left`,
          )
        if (!(await tx.debitInvoice(inv.id, part, now))) {
          throw overApplied(
            `Invoice #${inv.id} owes ${currency} ${toDecimal(inv.balance_minor, currency)}: applying ${toDecimal(part, currency)} would overpay it`,
          )
        }
        left -= part
        applied.push({ invoice_id: inv.id, amount_minor: part })
      }
      const id = await tx.insertItem({
        site_id: p.siteId,
        type: 'payment',
        currency,
        amount_minor: amount,
        balance_minor: left,
        method,
        payment_type: input.payment_type?.trim() || null,
        payment_reversed_at: null,
        created_at: now,
        updated_at: now,
      })
      if (applied.length) {
        await tx.insertApplications(
          applied.map((a) => ({ ...a, site_id: p.siteId, payment_id: id, created_at: now })),
        )
      }
      const onto = applied.map((a) => `#${a.invoice_id}`).join(', ')
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'create',
          display: `Recorded payment #${id} of ${currency} ${toDecimal(amount, currency)}${onto ? ` applied to invoice ${onto}` : ''}`,
          targets: [{ type: 'payment', id }, ...applied.map((a) => ({ type: 'invoice', id: a.invoice_id }))],
        },
        now,
      )
      return id
    })
  }

  /**
   * Reverses a payment (a chargeback or refund): every invoice it was applied to owes again
   * exactly what the payment took off it, and the payment's balance becomes 0, since the money is
   * gone and nothing of it can settle another invoice. Its line items stay, as history of what it
   * once settled. An unknown id or an invoice's id is 404; a payment already reversed is 422.
   */
  async reversePayment(p: Principal, id: number): Promise<void> {
    const now = this.now()
    await this.billing.transaction(async (tx) => {
      if (!(await tx.markReversed(p.siteId, id, now))) throw await this.whyNotReversed(tx, p, id)
      const pay = await tx.payment(id)
      const applied = await tx.appliedPerInvoice(id)
      for (const a of applied) await tx.creditInvoice(a.invoice_id, Number(a.amount_minor), now)
      const onto = applied.map((a) => `#${a.invoice_id}`).join(', ')
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'create',
          display: `Reversed payment #${id} of ${pay.currency} ${toDecimal(pay.amount_minor, pay.currency)}${onto ? `, given back to invoice ${onto}` : ''}`,
          targets: [{ type: 'payment', id }, ...applied.map((a) => ({ type: 'invoice', id: a.invoice_id }))],
        },
        now,
      )
    })
  }

  /** Why the reversal's UPDATE touched nothing: no such payment, or reversed already. */
  private async whyNotReversed(tx: BillingRepository, p: Principal, id: number): Promise<ApiError> {
    const row = await tx.typeAndReversal(p.siteId, id)
    if (!row) return ERRORS.notFound(`No payment with id ${id}`)
    if (row.type !== 'payment') return ERRORS.notFound(`#${id} is an invoice, not a payment`)
    const message = `Payment #${id} was already reversed at ${formatDateTime(row.payment_reversed_at)}`
    return ERRORS.modelSaveError(message, {
      modelErrors: { payment_reversed_at: [message] },
    })
  }
}

/** The request is well formed but the ledger cannot take it (the invoice's balance, the currency). */
const overApplied = (message: string) => ERRORS.modelSaveError(message, { modelErrors: { apply: [message] } })
