import type { Kysely } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'

/** The rights and address list of one group a user belongs to. */
export interface GroupLimits {
  ftp_permission: number
  sftp_permission: number
  dav_permission: number
  restapi_permission: number
  allowed_ips: string | null
}

/** What besides the user's own fields decides their logins: the site's list and their groups'. */
export interface AccessLimits {
  siteAllowedIps: string | null
  groups: GroupLimits[]
}

/** Reads the site's and a user's groups' limits; the site's own list is written here too. */
export class AccessRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new AccessRepository(db, this.dialect) as this
  }

  async limits(siteId: number, userId: number): Promise<AccessLimits> {
    const [site, groups] = await Promise.all([
      this.siteAllowedIps(siteId),
      this.db
        .selectFrom('group_users')
        .innerJoin('groups', 'groups.id', 'group_users.group_id')
        .select([
          'groups.ftp_permission',
          'groups.sftp_permission',
          'groups.dav_permission',
          'groups.restapi_permission',
          'groups.allowed_ips',
        ])
        .where('group_users.user_id', '=', userId)
        .execute(),
    ])
    return { siteAllowedIps: site, groups }
  }

  async siteAllowedIps(siteId: number): Promise<string | null> {
    const row = await this.db
      .selectFrom('sites')
      .select('allowed_ips')
      .where('id', '=', siteId)
      .executeTakeFirst()
    return row?.allowed_ips ?? null
  }

  async setSiteAllowedIps(siteId: number, allowedIps: string | null): Promise<void> {
    await this.db.updateTable('sites').set({ allowed_ips: allowedIps }).where('id', '=', siteId).execute()
  }
}
