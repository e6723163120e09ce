// Types for the billing part of the official `files.com` SDK (CommonJS, untyped) used by the tests.

declare module 'files.com/lib/models/AccountLineItem.js' {
  /** What Invoice and Payment list and find return. */
  export default class AccountLineItem {
    readonly id: number
    readonly type: string
    readonly amount: number
    readonly balance: number
    readonly currency: string
    readonly attributes: Record<string, unknown>
    getId(): number
    getType(): string
    getAmount(): number
    getBalance(): number
    getCurrency(): string
    getDownloadUri(): string
    getMethod(): string | null
    getPaymentType(): string | null
    getSiteName(): string
    getInvoiceLineItems(): Record<string, unknown>[]
    getPaymentLineItems(): Record<string, unknown>[]
  }
}

declare module 'files.com/lib/models/Invoice.js' {
  import type AccountLineItem from 'files.com/lib/models/AccountLineItem.js'

  interface ListParams {
    cursor?: string
    per_page?: number
  }
  const Invoice: {
    list(params?: ListParams): Promise<AccountLineItem[]>
    find(id: number): Promise<AccountLineItem>
  }
  export default Invoice
}

declare module 'files.com/lib/models/Payment.js' {
  import type AccountLineItem from 'files.com/lib/models/AccountLineItem.js'

  interface ListParams {
    cursor?: string
    per_page?: number
  }
  const Payment: {
    list(params?: ListParams): Promise<AccountLineItem[]>
    find(id: number): Promise<AccountLineItem>
  }
  export default Payment
}
