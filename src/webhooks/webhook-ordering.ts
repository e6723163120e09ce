import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/schema.js'

/**
 * Per-path ordering of deliveries (docs/decisions.md, "Webhook ordering"). Deliveries for one path
 * to one endpoint go out in the order of their Actions: a notification waits while an older one
 * of its ordering key is pending and has had fewer than the hold's attempts (past it, the older
 * one no longer holds the newer back). Each carries its number among its key's notifications in
 * `Webhook-Sequence`.
 */

/**
 * The ordering key of a notification: its site, its endpoint (the site's listener, or one URL of
 * one webhook behavior) and its path in lower case (paths are case-insensitive).
 */
export function orderKey(siteId: number, target: { behaviorId: number; url: string } | null, path: string) {
  const endpoint = target === null ? 'site' : `${target.behaviorId} ${target.url}`
  return `${siteId} ${endpoint} ${path.toLowerCase()}`
}

/**
 * The next sequence number of each key, raised in the caller's transaction (the Action's): one
 * statement for all of an Action's keys. Keys are locked in sorted order, so two transactions
 * raising the same keys wait for each other instead of deadlocking; the second one's numbers
 * are the higher, and it commits after the first.
 */
export async function nextSequences(
  db: Kysely<Database>,
  keys: readonly string[],
  now: number,
): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (keys.length === 0) return out
  const sorted = [...new Set(keys)].sort()
  const rows = await db
    .insertInto('webhook_sequences')
    .values(sorted.map((order_key) => ({ order_key, sequence: 1, updated_at: now })))
    .onConflict((oc) =>
      oc.column('order_key').doUpdateSet({
        sequence: sql<number>`webhook_sequences.sequence + 1`,
        updated_at: now,
      }),
    )
    .returning(['order_key', 'sequence'])
    .execute()
  for (const r of rows) out.set(r.order_key, Number(r.sequence))
  return out
}

/**
 * The condition of a claim (or of the next due time) that leaves out notifications an older
 * pending one of their key holds back. `hold` is a parameter or literal: the attempts after which
 * an older notification no longer holds newer ones, counted since an enable or a recovery last
 * queued it (`order_attempts_from`), so that what was kept goes out in order again. Written against the bare table name, as the
 * claim's own `select ... from webhook_notifications` reads it; `state = 'pending'` is a literal
 * so that SQLite uses the partial index.
 */
export const notHeldBack = (hold: unknown) => sql<boolean>`(order_key is null or not exists (
  select 1 from webhook_notifications older
  where older.order_key = webhook_notifications.order_key and older.state = 'pending'
    and older.sequence < webhook_notifications.sequence
    and older.attempts - older.order_attempts_from < ${hold}))`

/** Deletes the sequence numbers of keys unused since `cutoff`, in batches; returns how many went. */
export async function pruneSequences(db: Kysely<Database>, cutoff: number, batch = 5000): Promise<number> {
  let removed = 0
  for (;;) {
    const old = db
      .selectFrom('webhook_sequences')
      .select('order_key')
      .where('updated_at', '<', cutoff)
      .limit(batch)
    const res = await db.deleteFrom('webhook_sequences').where('order_key', 'in', old).executeTakeFirst()
    const n = Number(res.numDeletedRows)
    removed += n
    if (n < batch) break
  }
  return removed
}
