import { createRequire } from 'node:module'
import type PDFKitDocument from 'pdfkit'
import type { AccountLineItemJson } from './billing-service.js'
import { currencyDigits, toDecimal } from './money.js'

// pdfkit (with its font metrics, ~10 MiB of memory) is loaded by the first PDF a server draws,
// not by every server at start-up: most never draw one.
let PDFDocument: typeof PDFKitDocument | undefined
const loadPdfKit = () => (PDFDocument ??= createRequire(import.meta.url)('pdfkit') as typeof PDFKitDocument)

/**
 * The PDF behind an invoice's or payment's `download_uri`, drawn by pdfkit and streamed as it is
 * produced. It uses the PDF standard Helvetica font (no font files to ship), which covers Latin
 * text; characters outside it print as blanks.
 */
export function billingPdf(item: AccountLineItemJson): PDFKit.PDFDocument {
  const digits = currencyDigits(item.currency)
  // Back to exact minor units, then the same decimal text as everywhere else: toFixed on a large
  // double can print the wrong last digit.
  const money = (n: number) => `${item.currency} ${toDecimal(Math.round(n * 10 ** digits), item.currency)}`
  const date = (iso: string | null) => (iso ? iso.slice(0, 10) : '')
  const title = item.type === 'invoice' ? `Invoice #${item.id}` : `Payment receipt #${item.id}`
  const doc = new (loadPdfKit())({
    size: 'A4',
    margin: 50,
    info: { Title: title, Author: item.site_name, CreationDate: new Date(item.updated_at) },
  })
  doc.font('Helvetica-Bold').fontSize(20).text(title)
  doc.moveDown(0.5).font('Helvetica').fontSize(10)
  doc.text(`Account: ${item.site_name}`)
  doc.text(`Date: ${date(item.created_at)}`)
  if (item.type === 'payment') {
    doc.text(`Method: ${item.method ?? ''}${item.payment_type ? ` (${item.payment_type})` : ''}`)
    if (item.payment_reversed_at) doc.text(`Reversed: ${date(item.payment_reversed_at)}`)
  }
  doc.moveDown()

  const row = (left: string, right: string, bold = false) => {
    const y = doc.y
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica')
    doc.text(left, 50, y, { width: 360 })
    const after = doc.y
    doc.text(right, 420, y, { width: 125, align: 'right' })
    doc.y = Math.max(after, doc.y)
    doc.x = 50
  }
  if (item.type === 'invoice') {
    row('Description', 'Amount', true)
    for (const l of item.invoice_line_items) {
      const period =
        l.service_start_at || l.service_end_at
          ? ` (${date(l.service_start_at)} to ${date(l.service_end_at)})`
          : ''
      row(`${l.plan ? `${l.plan}: ` : ''}${l.description}${period}`, money(l.amount))
    }
    doc.moveDown(0.5)
    row('Total', money(item.amount), true)
    for (const p of item.payment_line_items)
      row(`Payment #${p.payment_id} received ${date(p.created_at)}`, `- ${money(p.amount)}`)
    row('Balance due', money(item.balance), true)
  } else {
    row('Amount received', money(item.amount), true)
    for (const p of item.payment_line_items) row(`Applied to invoice #${p.invoice_id}`, money(p.amount))
    row('Not yet applied', money(item.balance), true)
  }
  doc.end()
  return doc
}
