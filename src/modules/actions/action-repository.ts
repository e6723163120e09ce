import type { Insertable, Kysely } from 'kysely'
import type { ActionsTable, Database } from '../../db/schema.js'

/**
 * The actions table (the history). Functions over a connection rather than a class: an Action is
 * written with the transaction of the change it records, whichever module opened it.
 */

export async function insertAction(db: Kysely<Database>, values: Insertable<ActionsTable>): Promise<number> {
  const row = await db.insertInto('actions').values(values).returning('id').executeTakeFirstOrThrow()
  return row.id
}

/**
 * Several Actions in as few statements as the database takes (1,000 rows each); their ids in the
 * order of `rows` (ids are drawn in the order of the rows of one statement).
 */
export async function insertActions(
  db: Kysely<Database>,
  rows: Insertable<ActionsTable>[],
): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < rows.length; i += 1000) {
    const got = await db
      .insertInto('actions')
      .values(rows.slice(i, i + 1000))
      .returning('id')
      .execute()
    ids.push(...got.map((r) => Number(r.id)).sort((a, b) => a - b))
  }
  return ids
}

/** When a user name's failed logins of one kind were, oldest first. */
export async function failedLoginTimes(
  db: Kysely<Database>,
  siteId: number,
  username: string,
  failureType: string,
  since: number,
): Promise<number[]> {
  const rows = await db
    .selectFrom('actions')
    .select('created_at')
    .where('site_id', '=', siteId)
    .where('action', '=', 'failedlogin')
    .where('username', '=', username)
    .where('failure_type', '=', failureType)
    .where('created_at', '>', since)
    .orderBy('created_at', 'asc')
    .execute()
  return rows.map((r) => r.created_at)
}
