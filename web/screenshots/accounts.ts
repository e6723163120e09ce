import type { Page } from 'playwright-core'
import { operatorPrincipal } from '../../src/identity/principal.js'
import { grant, makeUser, type TestServer } from '../../test/helpers/server.js'

/** What the screenshot runner hands over: a site admin's signed-in page at 1280×800. */
export interface ShotContext {
  page: Page
  s: TestServer
  out(name: string): string
}

async function seed(s: TestServer): Promise<void> {
  const ledger = s.container.services.billingLedger
  // The operator at the command line, as `wharf billing` records (a site-wide caller).
  const op = operatorPrincipal(s.container.site.id)
  const months = ['January', 'February', 'March', 'April']
  const invoices: number[] = []
  for (const [i, month] of months.entries()) {
    invoices.push(
      await ledger.createInvoice(op, {
        currency: 'USD',
        lines: [
          {
            amount: '49.00',
            description: `Business plan, ${month}`,
            plan: 'Business',
            service_start_at: `2026-0${i + 1}-01`,
          },
          { amount: `${(3.2 * (i + 1)).toFixed(2)}`, description: `Transfer over quota, ${month}` },
        ],
      }),
    )
  }
  for (const id of invoices.slice(0, 3)) {
    await ledger.recordPayment(op, {
      currency: 'USD',
      amount: '60.00',
      method: 'card',
      payment_type: 'visa',
      apply: [{ invoice_id: id }],
    })
  }
  await ledger.recordPayment(op, {
    currency: 'USD',
    amount: '20.00',
    method: 'bank_transfer',
    apply: [{ invoice_id: invoices[3]!, amount: '20.00' }],
  })

  const db = s.container.db
  const alice = await makeUser(s, { username: 'alice', email: 'alice@example.com' })
  await db
    .updateTable('users')
    .set({ name: 'Alice Martin', last_login_at: Date.now() - 3_600_000 })
    .where('id', '=', alice.id)
    .execute()
  const bob = await makeUser(s, { username: 'scanner-bot', self_managed: false })
  await db.updateTable('users').set({ name: 'Document scanner' }).where('id', '=', bob.id).execute()
  const carol = await makeUser(s, { username: 'carol', email: 'carol@example.com', site_admin: true })
  await db.updateTable('users').set({ name: 'Carol Jones' }).where('id', '=', carol.id).execute()
  const dan = await makeUser(s, { username: 'dan', email: 'dan@example.com' })
  await db.updateTable('users').set({ name: 'Dan Okafor', disabled: 1 }).where('id', '=', dan.id).execute()

  await grant(s, alice.id, 'projects', 'full')
  await grant(s, alice.id, 'finance/reports', 'readonly')
  await grant(s, bob.id, 'inbox/scans', 'writeonly')
  await grant(s, dan.id, 'projects/archive', 'list')
  await grant(s, carol.id, 'finance', 'admin')
}

/** Billing, apps, users and folder permissions, each with realistic records. */
export async function shoot({ page, s, out }: ShotContext): Promise<void> {
  await seed(s)
  const base = s.url

  await page.goto(`${base}/#/billing`)
  await page.getByRole('table', { name: 'Payments' }).waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('billing'), fullPage: true })

  await page.goto(`${base}/#/apps`)
  await page.getByRole('article').first().waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('apps'), fullPage: true })

  await page.goto(`${base}/#/users`)
  await page.getByRole('rowheader', { name: 'scanner-bot', exact: true }).waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('users'), fullPage: true })

  await page.goto(`${base}/#/users/permissions`)
  await page.getByRole('cell', { name: '/inbox/scans', exact: true }).waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('permissions'), fullPage: true })
}
