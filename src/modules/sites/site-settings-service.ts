import { formatDateTime } from '../../api/datetime.js'
import { ApiError, type ModelErrors } from '../../api/errors.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { PasswordPolicy } from '../passwords/password-policy.js'
import {
  type PasswordRulesJson,
  type RulesInput,
  rulesPatch,
  toRulesJson,
} from '../passwords/password-rules.js'
import type { SiteRepository } from './site-repository.js'

/** The Site resource as Wharf shows it: who it is, and its password rules. */
export type SiteJson = { id: number; name: string; created_at: string } & PasswordRulesJson

export type UpdateSiteInput = RulesInput & {
  /** Read-only (the name is SITE_NAME): accepted only as echoes of the current values. */
  [readOnly: string]: unknown
}

const READ_ONLY_FIELDS = ['id', 'name', 'created_at']

/** GET and PATCH /site, for site administrators. */
export class SiteSettingsService {
  constructor(
    private readonly sites: SiteRepository,
    private readonly passwords: PasswordPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  async get(p: Principal): Promise<SiteJson> {
    requireSiteAdmin(p)
    return this.load(p.siteId)
  }

  /** What every user of the site may read: its name and the rules a password must meet. */
  async show(p: Principal): Promise<SiteJson> {
    return this.load(p.siteId)
  }

  /** Applies the given rules; a change records an `update` Action, and applies at once. */
  async update(p: Principal, input: UpdateSiteInput): Promise<SiteJson> {
    requireSiteAdmin(p)
    const current = await this.load(p.siteId)
    refuseChangedReadOnly(input, current, READ_ONLY_FIELDS)
    const errors: ModelErrors = {}
    this.passwords.forget(p.siteId)
    const patch = rulesPatch(await this.passwords.rules(p.siteId), input, errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const changed = Object.keys(patch)
    if (changed.length === 0) return current
    const now = this.now()
    await this.sites.transaction(async (tx) => {
      await this.passwords.repo.on(tx.db).updateRules(p.siteId, patch)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'update',
          display: `${p.user?.username ?? 'A site-wide API key'} changed the site's password rules (${changed.join(', ')})`,
          path: '',
          targets: [{ type: 'site', id: p.siteId }],
        },
        now,
      )
    })
    this.passwords.forget(p.siteId)
    return this.load(p.siteId)
  }

  private async load(siteId: number): Promise<SiteJson> {
    const site = await this.sites.find(siteId)
    return {
      id: site.id,
      name: site.name,
      created_at: formatDateTime(site.created_at)!,
      ...toRulesJson(await this.passwords.rules(siteId)),
    }
  }
}
