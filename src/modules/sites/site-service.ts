import type { Kysely, Selectable } from 'kysely'
import type { Config } from '../../config.js'
import type { Database, SitesTable } from '../../db/schema.js'
import { generatePassword, hashPassword, randomHex } from '../../security/secrets.js'
import { recordAction } from '../actions/action-recorder.js'

export type SiteRow = Selectable<SitesTable>

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
  db: Kysely<Database>,
  config: Config,
  now = Date.now(),
): Promise<BootstrapResult> {
  return db.transaction().execute(async (trx) => {
    let site = await trx.selectFrom('sites').selectAll().orderBy('id').limit(1).executeTakeFirst()
    if (!site) {
      site = await trx
        .insertInto('sites')
        .values({ name: config.siteName, signing_secret: randomHex(32), created_at: now })
        .returningAll()
        .executeTakeFirstOrThrow()
    } else if (site.name !== config.siteName) {
      await trx.updateTable('sites').set({ name: config.siteName }).where('id', '=', site.id).execute()
      site = { ...site, name: config.siteName }
    }
    const anyUser = await trx
      .selectFrom('users')
      .select('id')
      .where('site_id', '=', site.id)
      .limit(1)
      .executeTakeFirst()
    if (anyUser) return { site, generatedAdminPassword: null, createdAdmin: null }

    const generated = config.adminPassword ? null : generatePassword()
    const user = await trx
      .insertInto('users')
      .values({
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
      .returning(['id', 'username'])
      .executeTakeFirstOrThrow()
    await recordAction(
      trx,
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
