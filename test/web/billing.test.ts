import { beforeAll, describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../../src/identity/principal.js'
import {
  BROWSER_SUITE,
  expectNoOutsideRequests,
  hasBrowser,
  newPage,
  shown,
  signIn,
  textOf,
  webSuite,
} from '../helpers/browser.js'
import { call } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: billing', BROWSER_SUITE, () => {
  const web = webSuite()
  let invoiceId: number
  let paymentId: number
  let reversedId: number
  beforeAll(async () => {
    const operator = operatorPrincipal(web.s.container.site.id)
    const ledger = web.s.container.services.billingLedger
    invoiceId = await ledger.createInvoice(operator, {
      currency: 'EUR',
      lines: [
        { amount: '40.00', description: 'Storage, March', plan: 'Business' },
        { amount: '9.95', description: 'Transfer, March' },
      ],
    })
    paymentId = await ledger.recordPayment(operator, {
      currency: 'EUR',
      amount: '30.00',
      method: 'bank_transfer',
      apply: [{ invoice_id: invoiceId }],
    })
    reversedId = await ledger.recordPayment(operator, { currency: 'EUR', amount: '5.00', method: 'card' })
    await ledger.reversePayment(operator, reversedId)
  })

  it('lists invoices and payments with amounts in their currency, and downloads the signed PDF', async () => {
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/billing`)
    const invoices = page.getByRole('table', { name: 'Invoices' })
    const invoiceRow = invoices.getByRole('row').filter({ hasText: `#${invoiceId}` })
    const invoiceText = await textOf(invoiceRow)
    expect(invoiceText).toContain('€49.95')
    expect(invoiceText).toContain('Storage, March; Transfer, March')
    expect(invoiceText).toContain('Partly paid, €19.95 due')

    const paymentRow = page
      .getByRole('table', { name: 'Payments' })
      .getByRole('row')
      .filter({ hasText: `#${paymentId}` })
    const paymentText = await textOf(paymentRow)
    expect(paymentText).toContain('€30.00')
    expect(paymentText).toContain('bank_transfer')
    expect(paymentText).toContain('Received')
    const reversed = page
      .getByRole('table', { name: 'Payments' })
      .getByRole('row')
      .filter({ hasText: `#${reversedId}` })
    expect(await textOf(reversed)).toContain('Reversed')

    // The link is the record's signed download_uri, as the API gives it.
    const link = invoiceRow.getByRole('link', { name: `Download PDF of invoice #${invoiceId}` })
    const linkHref = (await link.getAttribute('href'))!
    const signed = new URL(linkHref)
    expect(signed.origin + signed.pathname).toBe(`${web.s.api}/billing_documents/${invoiceId}`)
    expect(signed.searchParams.get('signature')).toMatch(/\S{16,}/)
    const api = await call(web.s, 'GET', `/invoices/${invoiceId}`, { key: web.s.adminKey })
    expect(new URL(api.body.download_uri).searchParams.get('signature')).toBeTruthy()

    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15_000 }), link.click()])
    expect(download.url()).toBe(linkHref)
    expect(download.suggestedFilename()).toBe(`invoice-${invoiceId}.pdf`)
    const chunks: Buffer[] = []
    for await (const c of (await download.createReadStream())!) chunks.push(c as Buffer)
    const bytes = Buffer.concat(chunks)
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-')

    // Without its signature the same address is refused: the link works because it is signed.
    signed.searchParams.delete('signature')
    expect((await fetch(signed)).status).toBe(401)

    // The payment's receipt is offered as well.
    await shown(paymentRow.getByRole('link', { name: `Download PDF of payment #${paymentId}` }))
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('follows a fresh link when the page was left open past the link expiry', async () => {
    const page = await newPage(web.browser, web.s)
    await page.clock.install()
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/billing`)
    const link = page.getByRole('link', { name: `Download PDF of invoice #${invoiceId}` })
    await shown(link)
    // Two hours later (the links last one hour), as far as the page can tell.
    await page.clock.setSystemTime(Date.now() + 2 * 3600_000)
    const [asked, download] = await Promise.all([
      page.waitForRequest((r) => r.url() === `${web.s.api}/invoices/${invoiceId}`, { timeout: 15_000 }),
      page.waitForEvent('download', { timeout: 15_000 }),
      link.click(),
    ])
    expect(asked.method()).toBe('GET')
    expect(download.url()).toMatch(
      new RegExp(`^${web.s.api}/billing_documents/${invoiceId}\\?expires=\\d+&signature=`),
    )
    const chunks: Buffer[] = []
    for await (const c of (await download.createReadStream())!) chunks.push(c as Buffer)
    expect(Buffer.concat(chunks).subarray(0, 5).toString('latin1')).toBe('%PDF-')
    await page.context().close()
  })

  it('pages through more invoices than fit on one page', async () => {
    const operator = operatorPrincipal(web.s.container.site.id)
    for (let i = 0; i < 26; i++) {
      await web.s.container.services.billingLedger.createInvoice(operator, {
        currency: 'USD',
        lines: [{ amount: `${i + 1}.00`, description: `Line ${i}` }],
      })
    }
    const page = await newPage(web.browser, web.s, { width: 390, height: 844 })
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/billing`)
    const invoices = page.getByRole('table', { name: 'Invoices' })
    await shown(invoices.getByRole('row').filter({ hasText: `#${invoiceId}` }))
    expect(await invoices.getByRole('row').count()).toBe(26) // header + 25
    const pager = page.getByRole('navigation', { name: 'Invoices pages' })
    await pager.getByRole('button', { name: 'Next' }).click()
    await shown(invoices.getByRole('cell', { name: '$26.00' }))
    expect(await invoices.getByRole('row').count()).toBe(3)
    await pager.getByRole('button', { name: 'Previous' }).click()
    await shown(invoices.getByRole('row').filter({ hasText: `#${invoiceId}` }))
    await page.context().close()
  })
})
