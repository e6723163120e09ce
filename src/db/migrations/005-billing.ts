import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * Billing records: invoices and payments (AccountLineItem), the lines of an invoice, and the
 * applications of a payment to invoices. Money is integer minor units of the record's currency
 * (cents for USD, yen for JPY), so that sums and balances are exact on both dialects.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('account_line_items')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // invoice or payment
    .addColumn('type', 'text', (c) => c.notNull())
    // ISO 4217 code, upper case.
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    // Invoice: what is still owed. Payment: what is not yet applied to an invoice.
    .addColumn('balance_minor', 'bigint', (c) => c.notNull())
    .addColumn('method', 'text')
    .addColumn('payment_type', 'text')
    .addColumn('payment_reversed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    // The ledger's own checks keep these true; here a bug or a hand-made UPDATE cannot make an
    // invoice owe more than it asked, or a balance go below zero, without failing loudly.
    .addCheckConstraint('account_line_items_type', sql`type in ('invoice', 'payment')`)
    .addCheckConstraint(
      'account_line_items_balance',
      sql`amount_minor > 0 and balance_minor >= 0 and balance_minor <= amount_minor`,
    )
    .execute()
  // The two lists page by id within one site and one type.
  await db.schema
    .createIndex('account_line_items_site_type')
    .on('account_line_items')
    .columns(['site_id', 'type', 'id'])
    .execute()

  await db.schema
    .createTable('invoice_line_items')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('invoice_id', 'bigint', (c) => c.notNull().references('account_line_items.id'))
    .addColumn('amount_minor', 'bigint', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('plan', 'text')
    .addColumn('service_start_at', 'bigint')
    .addColumn('service_end_at', 'bigint')
    .addColumn('prepaid_bytes', 'bigint')
    .addColumn('prepaid_bytes_expire_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('invoice_line_items_invoice')
    .on('invoice_line_items')
    .columns(['invoice_id', 'id'])
    .execute()

  await db.schema
    .createTable('payment_line_items')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('payment_id', 'bigint', (c) => c.notNull().references('account_line_items.id'))
    .addColumn('invoice_id', 'bigint', (c) => c.notNull().references('account_line_items.id'))
    .addColumn('amount_minor', 'bigint', (c) => c.notNull().check(sql`amount_minor > 0`))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('payment_line_items_payment')
    .on('payment_line_items')
    .columns(['payment_id', 'id'])
    .execute()
  await db.schema
    .createIndex('payment_line_items_invoice')
    .on('payment_line_items')
    .columns(['invoice_id', 'id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['payment_line_items', 'invoice_line_items', 'account_line_items']) {
    await db.schema.dropTable(t).execute()
  }
}
