// Types for the Site part of the official `files.com` SDK (CommonJS, untyped) used by the tests.

declare module 'files.com/lib/models/Site.js' {
  type Params = Record<string, unknown>
  export default class Site {
    constructor(attributes?: Params, options?: Params)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly name: string
    readonly password_min_length: number
    readonly password_require_letter: boolean
    readonly password_require_mixed: boolean
    readonly password_require_number: boolean
    readonly password_require_special: boolean
    readonly max_prior_passwords: number
    readonly password_validity_days: number | null
    readonly contact_name: string | null
    readonly phone: string | null
    readonly email: string | null
    static get(params?: Params, options?: Params): Promise<Site>
    static update(params?: Params, options?: Params): Promise<Site>
  }
}
