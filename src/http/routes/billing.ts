import { Type } from '@sinclair/typebox'
import type { AccountLineItemType } from '../../db/schema.js'
import { billingPdf } from '../../modules/billing/billing-pdf.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { DateTime, errorResponses, IdParams, listQuery, Nullable, signedFileSchema } from '../schemas.js'

/** Amounts are doubles in the spec: `2010` is still typed float in XML. */
const MONEY = ['amount', 'balance']

const InvoiceLineItemSchema = Type.Object(
  {
    id: Type.Integer(),
    amount: Type.Number(),
    created_at: Type.String({ format: 'date-time' }),
    description: Type.String(),
    type: Type.String(),
    service_end_at: DateTime(),
    service_start_at: DateTime(),
    plan: Nullable(Type.String()),
    site: Type.String(),
    prepaid_bytes: Nullable(Type.Integer()),
    prepaid_bytes_expire_at: DateTime(),
    prepaid_bytes_used: Nullable(Type.Integer()),
    prepaid_bytes_available: Nullable(Type.Integer()),
  },
  { $id: 'InvoiceLineItem', title: 'InvoiceLineItem' },
)

const PaymentLineItemSchema = Type.Object(
  {
    amount: Type.Number(),
    created_at: Type.String({ format: 'date-time' }),
    invoice_id: Type.Integer(),
    payment_id: Type.Integer(),
  },
  { $id: 'PaymentLineItem', title: 'PaymentLineItem' },
)

export const AccountLineItemSchema = Type.Object(
  {
    id: Type.Integer(),
    amount: Type.Number(),
    balance: Type.Number(),
    created_at: Type.String({ format: 'date-time' }),
    currency: Type.String(),
    download_uri: Type.String({ description: 'Signed, expiring link to the PDF (no credentials)' }),
    invoice_line_items: Type.Array(InvoiceLineItemSchema),
    method: Nullable(Type.String()),
    payment_line_items: Type.Array(PaymentLineItemSchema),
    payment_reversed_at: DateTime(),
    payment_type: Nullable(Type.String()),
    site_name: Type.String(),
    type: Type.String({ description: 'invoice or payment' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'AccountLineItem', title: 'AccountLineItem' },
)

const ListQuery = listQuery({})
const tags = ['billing']
const one = { 200: AccountLineItemSchema, ...errorResponses }

/** GET /invoices, /payments (and by id), and the PDF behind their signed `download_uri`. */
export function billingRoutes(c: HttpContext): Routes {
  const svc = c.services.billing
  return async (app) => {
    for (const type of ['invoice', 'payment'] as AccountLineItemType[]) {
      const plural = `${type}s`
      app.get(
        `/${plural}`,
        {
          config: { xml: ['account-line-items', 'account-line-item'], xmlFloats: MONEY, access: 'any-key' },
          schema: {
            summary: `List ${plural}`,
            tags,
            querystring: ListQuery,
            response: { 200: Type.Array(AccountLineItemSchema), ...errorResponses },
          },
        },
        async (request, reply) => sendPage(reply, await svc.list(request.principal, type, request.query)),
      )
      app.get(
        `/${plural}/:id`,
        {
          config: { xml: 'account-line-item', xmlFloats: MONEY, access: 'any-key' },
          schema: { summary: `Show a ${type}`, tags, params: IdParams, response: one },
        },
        async (request) => svc.get(request.principal, type, request.params.id),
      )
    }

    app.get(
      '/billing_documents/:id',
      {
        config: { auth: false },
        schema: {
          summary: 'The PDF behind an invoice’s or payment’s download_uri (no credentials)',
          tags,
          ...signedFileSchema('application/pdf'),
        },
      },
      async (request, reply) => {
        const item = await svc.forLink(request.params.id, request.query)
        const name = `${item.type === 'invoice' ? 'invoice' : 'receipt'}-${item.id}.pdf`
        return reply
          .type('application/pdf')
          .header('Content-Disposition', `attachment; filename="${name}"`)
          .header('Cache-Control', 'private, no-store')
          .send(billingPdf(item))
      },
    )
  }
}
