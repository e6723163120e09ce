import { PostgresAdapter, type Transaction } from 'kysely'
import type { ApiError } from '../../api/errors.js'
import type { Database } from '../../db/schema.js'

/**
 * A site always keeps an enabled site administrator: refuses a change that takes the last one away
 * (demoted, disabled or deleted). Runs in the change's own transaction. On PostgreSQL the enabled
 * administrators' rows are locked first, so of two concurrent changes to the last two, the second
 * waits, then sees the first one's result (a locking read re-checks rows changed meanwhile) and is
 * refused; SQLite runs one write transaction at a time.
 */
export async function keepAnAdministrator(
  trx: Transaction<Database>,
  siteId: number,
  userId: number,
  refusal: ApiError,
): Promise<void> {
  let q = trx
    .selectFrom('users')
    .select('id')
    .where('site_id', '=', siteId)
    .where('site_admin', '=', 1)
    .where('disabled', '=', 0)
    .orderBy('id')
  if (trx.getExecutor().adapter instanceof PostgresAdapter) q = q.forUpdate()
  const admins = (await q.execute()).map((r) => r.id)
  if (admins.length === 1 && admins[0] === userId) throw refusal
}
