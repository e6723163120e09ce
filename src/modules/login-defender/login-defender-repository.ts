import type { Kysely, Selectable } from 'kysely'
import type { ListRequest, ListSpec, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { BannedAddressesTable, Database } from '../../db/schema.js'

export type BannedAddressRow = Selectable<BannedAddressesTable>

export const BANNED_ADDRESS_LIST: ListSpec = {
  name: 'banned_addresses',
  idColumn: 'banned_addresses.id',
  sort: {},
  filter: {},
}

/** The SQL of the login defender: failures by address and the bans they led to. */
export class LoginDefenderRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new LoginDefenderRepository(db, this.dialect) as this
  }

  /** When the address's ban ends, if it has one (possibly already over): a primary-key read. */
  async bannedUntil(siteId: number, address: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('banned_addresses')
      .select('banned_until')
      .where('site_id', '=', siteId)
      .where('address', '=', address)
      .executeTakeFirst()
    return row?.banned_until
  }

  /** Records a failure and answers how many the address has had since `since`, this one included. */
  async addFailure(
    siteId: number,
    address: string,
    kind: string,
    now: number,
    since: number,
  ): Promise<number> {
    await this.db
      .insertInto('login_failures')
      .values({ site_id: siteId, address, kind, created_at: now })
      .execute()
    const row = await this.db
      .selectFrom('login_failures')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('site_id', '=', siteId)
      .where('address', '=', address)
      .where('created_at', '>', since)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  /**
   * Bans the address (a ban already there is replaced) and forgets its failures: the ban carries
   * their count, and when it ends the address starts afresh.
   */
  async ban(siteId: number, address: string, now: number, until: number, failures: number): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.db
        .insertInto('banned_addresses')
        .values({ site_id: siteId, address, banned_at: now, banned_until: until, failures })
        .onConflict((oc) =>
          oc.columns(['site_id', 'address']).doUpdateSet({ banned_at: now, banned_until: until, failures }),
        )
        .execute()
      await tx.forgetFailures(siteId, address)
    })
  }

  /** Lifts a ban that is still running, with the failures behind it; false if there was none. */
  async lift(siteId: number, address: string, now: number): Promise<boolean> {
    return this.transaction(async (tx) => {
      const gone = await tx.db
        .deleteFrom('banned_addresses')
        .where('site_id', '=', siteId)
        .where('address', '=', address)
        .where('banned_until', '>', now)
        .executeTakeFirst()
      await tx.forgetFailures(siteId, address)
      return Number(gone.numDeletedRows) > 0
    })
  }

  /** Bans still running, oldest ban first. */
  page(siteId: number, now: number, list: ListRequest): Promise<Page<BannedAddressRow>> {
    const q = this.db
      .selectFrom('banned_addresses')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('banned_until', '>', now)
      // Share links locked by wrong passwords (`bundle:<id>`) are no client addresses.
      .where('address', 'not like', 'bundle:%')
    return selectPage(q, list)
  }

  /** Deletes failures at or before `failuresBefore` and bans over by `now`, in every site. */
  async prune(failuresBefore: number, now: number): Promise<void> {
    await this.db.deleteFrom('login_failures').where('created_at', '<=', failuresBefore).execute()
    await this.db.deleteFrom('banned_addresses').where('banned_until', '<=', now).execute()
  }

  private async forgetFailures(siteId: number, address: string): Promise<void> {
    await this.db
      .deleteFrom('login_failures')
      .where('site_id', '=', siteId)
      .where('address', '=', address)
      .execute()
  }
}
