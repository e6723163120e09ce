import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { AccountLineItemType } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { invalidLink } from '../../security/signed-link.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import type { ModuleSettings } from '../settings.js'
import { billingDocumentUrl, checkBillingDocumentLink } from './billing-link.js'
import type { AccountLineItemRow, BillingRepository } from './billing-repository.js'
import { toNumber } from './money.js'

/** InvoiceLineItem, with the Files.com SDK's field names. */
export interface InvoiceLineItemJson {
  id: number
  amount: number
  created_at: string
  description: string
  type: 'invoice'
  service_end_at: string | null
  service_start_at: string | null
  plan: string | null
  site: string
  prepaid_bytes: number | null
  prepaid_bytes_expire_at: string | null
  prepaid_bytes_used: number | null
  prepaid_bytes_available: number | null
}

/** PaymentLineItem: one application of a payment to an invoice. */
export interface PaymentLineItemJson {
  amount: number
  created_at: string
  invoice_id: number
  payment_id: number
}

export interface AccountLineItemJson {
  id: number
  amount: number
  balance: number
  created_at: string
  currency: string
  download_uri: string
  invoice_line_items: InvoiceLineItemJson[]
  method: string | null
  payment_line_items: PaymentLineItemJson[]
  payment_reversed_at: string | null
  payment_type: string | null
  site_name: string
  type: AccountLineItemType
  updated_at: string
}

type Row = AccountLineItemRow

const listSpec = (type: AccountLineItemType): ListSpec => ({
  name: `${type}s`,
  idColumn: 'account_line_items.id',
  sort: {},
  filter: {},
})
export const INVOICE_LIST = listSpec('invoice')
export const PAYMENT_LIST = listSpec('payment')

/**
 * GET /invoices and /payments: the site's billing records with their line items. Every
 * authenticated caller may read them (the spec opens all four endpoints to every key or session).
 */
export class BillingService {
  constructor(
    private readonly billing: BillingRepository,
    private readonly config: ModuleSettings,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
  ) {}

  async list(p: Principal, type: AccountLineItemType, query: Record<string, unknown>) {
    const spec = type === 'invoice' ? INVOICE_LIST : PAYMENT_LIST
    const list = await readListRequest(this.secrets, p.siteId, spec, query)
    const page = await this.billing.page(p.siteId, type, list)
    return { ...page, items: await this.render(page.items, list.secret) }
  }

  async get(p: Principal, type: AccountLineItemType, id: number): Promise<AccountLineItemJson> {
    return this.getInSite(p.siteId, type, id)
  }

  async getInSite(siteId: number, type: AccountLineItemType, id: number): Promise<AccountLineItemJson> {
    const row = await this.billing.find(siteId, type, id)
    if (!row) throw ERRORS.notFound(`No ${type} with id ${id}`)
    const secret = await this.secrets.signingSecret(siteId)
    const [json] = await this.render([row], secret)
    return json!
  }

  /** The record behind a signed `download_uri`; a tampered, expired or foreign link is 401. */
  async forLink(
    id: number,
    query: { expires?: string | undefined; signature?: string | undefined },
  ): Promise<AccountLineItemJson> {
    const row = await this.billing.siteAndType(id)
    if (!row) throw invalidLink()
    const secret = await this.secrets.signingSecret(row.site_id)
    checkBillingDocumentLink(secret, row.site_id, id, query, this.now())
    return this.getInSite(row.site_id, row.type, id)
  }

  /** A page of records with their line items: two queries for the whole page, not two per record. */
  private async render(rows: Row[], secret: string): Promise<AccountLineItemJson[]> {
    if (rows.length === 0) return []
    const invoiceIds = rows.filter((r) => r.type === 'invoice').map((r) => r.id)
    const paymentIds = rows.filter((r) => r.type === 'payment').map((r) => r.id)
    const lines = await this.billing.invoiceLines(invoiceIds)
    const applications = await this.billing.applications(invoiceIds, paymentIds)
    const expires = Math.floor(this.now() / 1000) + this.config.files.downloadUrlSeconds
    return rows.map((r) => ({
      id: r.id,
      amount: toNumber(r.amount_minor, r.currency),
      balance: toNumber(r.balance_minor, r.currency),
      created_at: formatDateTime(r.created_at)!,
      currency: r.currency,
      download_uri: billingDocumentUrl(this.config.baseUrl, secret, r.site_id, r.id, expires),
      invoice_line_items: lines
        .filter((l) => l.invoice_id === r.id)
        .map((l) => ({
          id: l.id,
          amount: toNumber(l.amount_minor, r.currency),
          created_at: formatDateTime(l.created_at)!,
          description: l.description,
          type: 'invoice' as const,
          service_end_at: formatDateTime(l.service_end_at),
          service_start_at: formatDateTime(l.service_start_at),
          plan: l.plan,
          site: r.site_name,
          prepaid_bytes: l.prepaid_bytes,
          prepaid_bytes_expire_at: formatDateTime(l.prepaid_bytes_expire_at),
          // Wharf does not meter usage against prepaid bytes: unknown, not zero.
          prepaid_bytes_used: null,
          prepaid_bytes_available: null,
        })),
      method: r.method,
      payment_line_items: applications
        .filter((a) => (r.type === 'invoice' ? a.invoice_id : a.payment_id) === r.id)
        .map((a) => ({
          amount: toNumber(a.amount_minor, a.currency),
          created_at: formatDateTime(a.created_at)!,
          invoice_id: a.invoice_id,
          payment_id: a.payment_id,
        })),
      payment_reversed_at: formatDateTime(r.payment_reversed_at),
      payment_type: r.payment_type,
      site_name: r.site_name,
      type: r.type,
      updated_at: formatDateTime(r.updated_at)!,
    }))
  }
}
