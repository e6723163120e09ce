import { generatePassword, hashPassword, randomHex } from '../../security/secrets.js'
import { recordAction } from '../actions/action-recorder.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'
import type { SiteRepository, SiteRow } from './site-repository.js'

export type { SiteRow } from './site-repository.js'

export interface BootstrapResult {
  site: SiteRow
  /** Set when this start created the admin with a generated password (to be printed once). */
  generatedAdminPassword: string | null
  createdAdmin: string | null
}

/**
 * First start: create the site and its site admin. Idempotent, and safe when several processes
 * start at once on PostgreSQL (the loser of the race finds the winner's rows).
 */
export async function bootstrapSite(
  sites: SiteRepository,
  users: UserRepository,
  config: ModuleSettings,
  now = Date.now(),
): Promise<BootstrapResult> {
  return sites.transaction(async (tx) => {
    const userRows = users.on(tx.db)
    let site = await tx.first()
    if (!site) {
      site = await tx.insert({ name: config.siteName, signing_secret: randomHex(32), created_at: now })
    } else if (site.name !== config.siteName) {
      await tx.rename(site.id, config.siteName)
      site = { ...site, name: config.siteName }
    }
    if (await userRows.anyInSite(site.id)) return { site, generatedAdminPassword: null, createdAdmin: null }

    const generated = config.adminPassword ? null : generatePassword()
    const user = await userRows.insert({
      site_id: site.id,
      username: config.adminUsername,
      username_lower: config.adminUsername.toLowerCase(),
      password_hash: await hashPassword(config.adminPassword ?? generated!),
      name: 'Site administrator',
      email: null,
      site_admin: 1,
      self_managed: 1,
      disabled: 0,
      created_at: now,
      updated_at: now,
      last_login_at: null,
      password_set_at: now,
    })
    await recordAction(
      tx.db,
      { siteId: site.id, userId: null, username: null, ip: null, interface: null },
      {
        action: 'user_create',
        display: `Created site administrator ${user.username} at first start`,
        targets: [{ type: 'user', id: user.id, name: user.username }],
      },
      now,
    )
    return { site, generatedAdminPassword: generated, createdAdmin: user.username }
  })
}
