import { useState } from 'preact/hooks'
import { get, type Me } from '../api'
import { PagedTable, useCursorPages } from '../components/accounts-paging'
import type { Route } from '../router'
import { ColumnHeads, formatDate, PageTitle } from '../ui'
import './accounts.css'

/** An invoice or a payment, as GET /invoices and GET /payments give them. */
interface LineItem {
  id: number
  type: 'invoice' | 'payment'
  amount: number
  balance: number
  currency: string
  created_at: string
  download_uri: string
  method: string | null
  payment_type: string | null
  payment_reversed_at: string | null
  invoice_line_items: { description: string }[]
  payment_line_items: { invoice_id: number; amount: number }[]
}

const PER_PAGE = 25

/** A billing record's day (the time of day says nothing on an invoice). */
function formatDay(iso: string): string {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleDateString()
}

/** An amount in its currency's own way of writing it (USD 49.95 → $49.95, JPY without decimals). */
export function formatMoney(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount)
  } catch {
    return `${currency} ${amount}`
  }
}

function invoiceStatus(i: LineItem): { text: string; cls: string } {
  if (i.balance <= 0) return { text: 'Paid', cls: 'ok' }
  if (i.balance < i.amount)
    return { text: `Partly paid, ${formatMoney(i.balance, i.currency)} due`, cls: 'bad' }
  return { text: 'Due', cls: 'bad' }
}

function paymentStatus(p: LineItem): { text: string; cls: string } {
  if (p.payment_reversed_at) return { text: `Reversed ${formatDate(p.payment_reversed_at)}`, cls: 'bad' }
  if (p.balance > 0) return { text: `Received, ${formatMoney(p.balance, p.currency)} not applied`, cls: 'ok' }
  return { text: 'Received', cls: 'ok' }
}

/** Seconds since the epoch at which a signed link stops working (its `expires`), if it says. */
function expiresAt(uri: string): number | null {
  try {
    const v = Number(new URL(uri, location.href).searchParams.get('expires'))
    return Number.isFinite(v) && v > 0 ? v : null
  } catch {
    return null
  }
}

/**
 * The record's PDF link. A page left open past the link's expiry asks the API for the record
 * again and follows its fresh link, instead of sending the user to a refusal.
 */
function PdfLink({ item, onError }: { item: LineItem; onError: (err: unknown) => void }) {
  async function open(e: MouseEvent) {
    const expires = expiresAt(item.download_uri)
    if (expires === null || expires - Date.now() / 1000 > 30) return
    e.preventDefault()
    try {
      const fresh = await get<LineItem>(`/${item.type}s/${item.id}`)
      location.assign(fresh.download_uri)
    } catch (err) {
      onError(err)
    }
  }
  return (
    <a
      href={item.download_uri}
      download
      onClick={open}
      aria-label={`Download PDF of ${item.type} #${item.id}`}
    >
      Download PDF
    </a>
  )
}

function Records({ type }: { type: 'invoice' | 'payment' }) {
  const plural = type === 'invoice' ? 'Invoices' : 'Payments'
  const list = useCursorPages<LineItem>(`/${type}s`, {}, PER_PAGE)
  const [linkError, setLinkError] = useState<unknown>(null)
  return (
    <section aria-labelledby={`${type}s-title`}>
      <h2 id={`${type}s-title`}>{plural}</h2>
      <PagedTable list={list} label={plural} empty={`No ${type}s yet.`} error={list.error ?? linkError}>
        {(items) => (
          <table class="cards">
            <caption class="visually-hidden">{plural}</caption>
            <ColumnHeads
              columns={[
                'Date',
                type === 'invoice' ? 'Invoice' : 'Payment',
                { label: 'Amount', num: true },
                type === 'invoice' ? 'For' : 'Method',
                'Status',
                'Document',
              ]}
            />
            <tbody>
              {items.map((r) => {
                const status = type === 'invoice' ? invoiceStatus(r) : paymentStatus(r)
                return (
                  <tr key={r.id}>
                    <td class="nowrap">{formatDay(r.created_at)}</td>
                    <td>#{r.id}</td>
                    <td class="num">{formatMoney(r.amount, r.currency)}</td>
                    <td class="billing-for">
                      {type === 'invoice'
                        ? r.invoice_line_items.map((l) => l.description).join('; ')
                        : [r.method, r.payment_type].filter(Boolean).join(', ')}
                    </td>
                    <td class={status.cls}>{status.text}</td>
                    <td>
                      <PdfLink item={r} onError={setLinkError} />
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        )}
      </PagedTable>
    </section>
  )
}

export function BillingPage(_props: { route: Route; me: Me }) {
  return (
    <section>
      <PageTitle>Billing</PageTitle>
      <p class="muted">
        Invoices and payments of this site. Each PDF is a signed link that opens without signing in, for a
        limited time.
      </p>
      <Records type="invoice" />
      <Records type="payment" />
    </section>
  )
}
