import { ERRORS } from '../../api/error-factories.js'
import { ApiError, type ModelErrors } from '../../api/errors.js'
import type { Principal } from '../../identity/principal.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { blankToNull, checkEmail } from '../users/user-model.js'
import type { SiteRepository } from './site-repository.js'

/** The site's billing contact: the Files.com Site fields Wharf keeps as billing information. */
export const CONTACT_FIELDS = ['contact_name', 'phone', 'email'] as const

export type ContactField = (typeof CONTACT_FIELDS)[number]
export type ContactJson = Record<ContactField, string | null>
export type ContactInput = Partial<Record<ContactField, string | null | undefined>>

/**
 * Who sees the billing contact on GET /site: site admins, users with `billing_permission`, and
 * site-wide keys. Read-only site admins are not site admins here: they see the site's
 * configuration but not its billing (unless their own `billing_permission` gives it).
 */
export function mayReadBilling(p: Principal): boolean {
  return p.user === null || p.user.site_admin === 1 || p.user.billing_permission === 1
}

/** Who changes it: users with `billing_permission` (site admins too need it), and site-wide keys. */
export function mayChangeBilling(p: Principal): boolean {
  return p.user === null || p.user.billing_permission === 1
}

/** GET and PATCH of the site's billing contact (the fields of GET/PATCH /site). */
export class BillingContactService {
  constructor(
    private readonly sites: SiteRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** The contact when `p` may read it, else nothing (the fields are left out of the Site). */
  async show(p: Principal): Promise<Partial<ContactJson>> {
    if (!mayReadBilling(p)) return {}
    const site = await this.sites.find(p.siteId)
    return { contact_name: site.contact_name, phone: site.phone, email: site.email }
  }

  /**
   * Refuses what `update` would refuse, changing nothing (PATCH /site checks every field before it
   * saves any): 403 `not-authorized/billing-permission-required` without the permission, 422 on a
   * bad e-mail address. The values to store; undefined when the input sets none.
   */
  check(p: Principal, input: ContactInput): Partial<ContactJson> | undefined {
    const given = CONTACT_FIELDS.filter((f) => input[f] !== undefined)
    if (given.length === 0) return undefined
    if (!mayChangeBilling(p)) {
      throw ERRORS.billingPermissionRequired(
        `Changing the site's billing contact (${given.join(', ')}) needs billing_permission`,
      )
    }
    const errors: ModelErrors = {}
    const values: Partial<ContactJson> = {}
    for (const f of given) {
      const v = input[f] ?? null
      values[f] = f === 'email' ? checkEmail(v, errors) : blankToNull(v === null ? null : v.trim())
    }
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    return values
  }

  /** Saves what `check` returned; a change records an `update` Action on the site. */
  async update(p: Principal, values: Partial<ContactJson>): Promise<void> {
    const site = await this.sites.find(p.siteId)
    const changed = CONTACT_FIELDS.filter((f) => values[f] !== undefined && values[f] !== site[f])
    if (changed.length === 0) return
    const patch = Object.fromEntries(changed.map((f) => [f, values[f] ?? null]))
    await this.sites.transaction(async (tx) => {
      await tx.updateContact(p.siteId, patch)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'update',
          display: `${p.user?.username ?? 'A site-wide API key'} changed the site's billing contact (${changed.join(', ')})`,
          path: '',
          targets: [{ type: 'site', id: p.siteId }],
        },
        this.now(),
      )
    })
  }
}
