import { recordLink } from '../../security/signed-link.js'

/**
 * `download_uri` of an invoice or payment: a signed, expiring link to its PDF, usable without
 * credentials like a file's download link (and refused the same way: 401 invalid-or-expired-code).
 */
const link = recordLink('billing-document', 'billing_documents')

export const billingDocumentUrl = link.url
export const checkBillingDocumentLink = link.check
