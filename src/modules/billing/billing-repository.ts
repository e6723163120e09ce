import type { Insertable, Kysely, Selectable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type {
  AccountLineItemsTable,
  AccountLineItemType,
  Database,
  InvoiceLineItemsTable,
  PaymentLineItemsTable,
} from '../../db/schema.js'

/** An invoice or payment with the name of its site. */
export type AccountLineItemRow = Selectable<AccountLineItemsTable> & { site_name: string }

/** The billing tables: invoices and payments (account_line_items) and their line items. */
export class BillingRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new BillingRepository(db, this.dialect) as this
  }

  private items(siteId: number, type: AccountLineItemType) {
    return this.db
      .selectFrom('account_line_items')
      .innerJoin('sites', 'sites.id', 'account_line_items.site_id')
      .selectAll('account_line_items')
      .select('sites.name as site_name')
      .where('account_line_items.site_id', '=', siteId)
      .where('account_line_items.type', '=', type)
  }

  page(siteId: number, type: AccountLineItemType, list: ListRequest): Promise<Page<AccountLineItemRow>> {
    return selectPage(this.items(siteId, type), list)
  }

  find(siteId: number, type: AccountLineItemType, id: number): Promise<AccountLineItemRow | undefined> {
    return this.items(siteId, type).where('account_line_items.id', '=', id).executeTakeFirst()
  }

  /** The site and type of a record known only by its id (a signed document link). */
  siteAndType(id: number) {
    return this.db
      .selectFrom('account_line_items')
      .select(['site_id', 'type'])
      .where('id', '=', id)
      .executeTakeFirst()
  }

  /** The lines of these invoices, in order. */
  invoiceLines(invoiceIds: number[]): Promise<Selectable<InvoiceLineItemsTable>[]> {
    if (invoiceIds.length === 0) return Promise.resolve([])
    return this.db
      .selectFrom('invoice_line_items')
      .selectAll()
      .where('invoice_id', 'in', invoiceIds)
      .orderBy('id')
      .execute()
  }

  /** The applications of payments to these invoices, or of these payments, with the payment's currency. */
  applications(invoiceIds: number[], paymentIds: number[]) {
    return this.db
      .selectFrom('payment_line_items as pl')
      .innerJoin('account_line_items as pay', 'pay.id', 'pl.payment_id')
      .select(['pl.payment_id', 'pl.invoice_id', 'pl.amount_minor', 'pl.created_at', 'pay.currency'])
      .where((eb) =>
        eb.or([
          ...(invoiceIds.length ? [eb('pl.invoice_id', 'in', invoiceIds)] : []),
          ...(paymentIds.length ? [eb('pl.payment_id', 'in', paymentIds)] : []),
        ]),
      )
      .orderBy('pl.id')
      .execute()
  }

  // ---------- the ledger's writes ----------

  async insertItem(values: Insertable<AccountLineItemsTable>): Promise<number> {
    const { id } = await this.db
      .insertInto('account_line_items')
      .values(values)
      .returning('id')
      .executeTakeFirstOrThrow()
    return id
  }

  async insertInvoiceLines(lines: Insertable<InvoiceLineItemsTable>[]): Promise<void> {
    await this.db.insertInto('invoice_line_items').values(lines).execute()
  }

  async insertApplications(applications: Insertable<PaymentLineItemsTable>[]): Promise<void> {
    await this.db.insertInto('payment_line_items').values(applications).execute()
  }

  findInvoice(siteId: number, id: number) {
    return this.db
      .selectFrom('account_line_items')
      .select(['id', 'currency', 'balance_minor'])
      .where('site_id', '=', siteId)
      .where('type', '=', 'invoice')
      .where('id', '=', id)
      .executeTakeFirst()
  }

  /**
   * Takes `amount` off an invoice's balance, unless it owes less: the check is in the UPDATE
   * itself, so two payments racing for one invoice cannot both take what it owes.
   */
  async debitInvoice(id: number, amount: number, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('account_line_items')
      .set((eb) => ({ balance_minor: eb('balance_minor', '-', amount), updated_at: now }))
      .where('id', '=', id)
      .where('balance_minor', '>=', amount)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) === 1
  }

  async creditInvoice(id: number, amount: number, now: number): Promise<void> {
    await this.db
      .updateTable('account_line_items')
      .set((eb) => ({ balance_minor: eb('balance_minor', '+', amount), updated_at: now }))
      .where('id', '=', id)
      .execute()
  }

  /**
   * Marks a payment reversed with balance 0, unless it already is: the check is in the UPDATE
   * itself, so two reversals of one payment at once cannot both give its amounts back.
   */
  async markReversed(siteId: number, id: number, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('account_line_items')
      .set({ payment_reversed_at: now, balance_minor: 0, updated_at: now })
      .where('site_id', '=', siteId)
      .where('type', '=', 'payment')
      .where('id', '=', id)
      .where('payment_reversed_at', 'is', null)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) === 1
  }

  payment(id: number) {
    return this.db
      .selectFrom('account_line_items')
      .select(['currency', 'amount_minor'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  }

  /** What a payment took off each invoice, summed per invoice. */
  appliedPerInvoice(paymentId: number) {
    return this.db
      .selectFrom('payment_line_items')
      .select(['invoice_id', (eb) => eb.fn.sum<number | string>('amount_minor').as('amount_minor')])
      .where('payment_id', '=', paymentId)
      .groupBy('invoice_id')
      .orderBy('invoice_id')
      .execute()
  }

  typeAndReversal(siteId: number, id: number) {
    return this.db
      .selectFrom('account_line_items')
      .select(['type', 'payment_reversed_at'])
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }
}
