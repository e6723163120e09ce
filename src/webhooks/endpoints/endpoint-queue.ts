import { type Kysely, sql } from 'kysely'
import { dialectOf } from '../../db/dialects/dialect-of.js'
import type { Database } from '../../db/schema.js'
import { type EndpointRow, ofEndpoint } from './endpoint-rows.js'

/**
 * The outbox as one endpoint sees it: notifications held while it is paused or disabled, released
 * (in their order) or discarded when it is enabled again, and recoveries of past notifications.
 */

/**
 * A claimed notification whose endpoint is paused or disabled is held: kept, not attempted, its
 * claim given up. Only while the endpoint still is (an endpoint enabled since the claim gets it
 * sent). True when it was held.
 */
export async function holdClaimed(
  db: Kysely<Database>,
  id: number,
  owner: string,
  endpointId: number,
  now: number,
): Promise<boolean> {
  const res = await db
    .updateTable('webhook_notifications')
    .set({ state: 'held', next_attempt_at: null, lease_owner: null, lease_until: null, updated_at: now })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where(
      sql<boolean>`exists (select 1 from webhook_endpoints e where e.id = ${endpointId} and e.state in ('paused', 'disabled'))`,
    )
    .executeTakeFirst()
  return res.numUpdatedRows !== 0n
}

/**
 * The held notifications of an endpoint go back to the outbox, due now, and are sent in each
 * path's order whatever the endpoint's concurrency: the order hold counts their attempts afresh
 * (webhook-ordering.ts), so those that had failed past it before they were kept wait for one
 * another again.
 */
export async function releaseHeld(db: Kysely<Database>, e: EndpointRow, now: number): Promise<number> {
  const res = await db
    .updateTable('webhook_notifications')
    .set({
      state: 'pending',
      next_attempt_at: now,
      order_attempts_from: sql<number>`attempts`,
      updated_at: now,
    })
    .where(ofEndpoint(e))
    .where('state', '=', 'held')
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/**
 * What waits for an endpoint is discarded (`dropped`), by an operator's choice: the held
 * notifications and the pending ones not being sent right now (a retry waiting for its time).
 */
export async function discardQueued(db: Kysely<Database>, e: EndpointRow, now: number): Promise<number> {
  const res = await db
    .updateTable('webhook_notifications')
    .set({ state: 'dropped', next_attempt_at: null, updated_at: now })
    .where(ofEndpoint(e))
    .where((eb) =>
      eb.or([eb('state', '=', 'held'), eb.and([eb('state', '=', 'pending'), eb('lease_owner', 'is', null)])]),
    )
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** How many notifications wait for an endpoint (pending or held), and since when the oldest. */
export async function queuedOf(
  db: Kysely<Database>,
  e: EndpointRow,
): Promise<{ count: number; oldest: number | null }> {
  const row = await db
    .selectFrom('webhook_notifications')
    .select([sql<number>`count(*)`.as('n'), sql<number | null>`min(created_at)`.as('oldest')])
    .where(ofEndpoint(e))
    .where('state', 'in', ['pending', 'held'])
    .executeTakeFirst()
  return { count: Number(row?.n ?? 0), oldest: row?.oldest == null ? null : Number(row.oldest) }
}

export interface RecoverRange {
  since: number | null
  until: number | null
  onlyFailed: boolean
}

/**
 * The past notifications of an endpoint a recovery sends again: those of file actions (not tests)
 * made in the range that are finished (delivered, failed, or dropped; only failed ones with
 * `onlyFailed`). Those still queued are left as they are.
 */
function recoverable(db: Kysely<Database>, e: EndpointRow, r: RecoverRange) {
  let q = db
    .selectFrom('webhook_notifications')
    .where(ofEndpoint(e))
    .where('action_id', 'is not', null)
    .where('state', 'in', r.onlyFailed ? ['failed'] : ['delivered', 'failed', 'dropped'])
  if (r.since !== null) q = q.where('created_at', '>=', r.since)
  if (r.until !== null) q = q.where('created_at', '<', r.until)
  return q
}

export async function countRecoverable(
  db: Kysely<Database>,
  e: EndpointRow,
  r: RecoverRange,
): Promise<number> {
  const row = await recoverable(db, e, r).select(sql<number>`count(*)`.as('n')).executeTakeFirst()
  return Number(row?.n ?? 0)
}

/**
 * Puts the recoverable notifications back in the outbox, due now, each with its own id and event
 * id (`webhook-id`), so they go out in each path's order; each gets a full retry schedule
 * (`attempts` of the schedule beyond those it had). Returns how many.
 */
export async function recover(
  db: Kysely<Database>,
  e: EndpointRow,
  r: RecoverRange,
  scheduleAttempts: number,
  now: number,
): Promise<number> {
  const ids = recoverable(db, e, r).select('id')
  const res = await db
    .updateTable('webhook_notifications')
    .set({
      state: 'pending',
      forced: 1,
      max_attempts: sql<number>`attempts + ${scheduleAttempts}`,
      // In each path's order, as when first sent: the order hold counts attempts from here.
      order_attempts_from: sql<number>`attempts`,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
    })
    .where('id', 'in', ids)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** Notifications put back in the outbox from which its statistics are gathered again. */
export const REQUEUED_FOR_ANALYZE = 1000
/** How long the statistics wait after a release, so that a burst of enables shares one analyze. */
export const ANALYZE_AFTER_MS = 100

/**
 * Gathers the outbox's statistics again once many notifications went back to it (enables and
 * recoveries, counted together in this process): the planner's statistics (PostgreSQL) still say
 * almost none is pending, and until autovacuum analyzes the table, a minute later or never where
 * it is off, each claim reads through every pending row. 100,000 released took 6–10 minutes to
 * send that way, and 46 s with the statistics gathered again right away (docs/performance.md,
 * "Webhook endpoints"). A hundred endpoints enabled at once, each with a few hundred kept, add
 * up to the same. Nothing to do on SQLite, which keeps no statistics.
 */
export class OutboxStatistics {
  private count = 0
  /** The analyze asked for and not finished yet (its short wait included). */
  private pending: Promise<void> | null = null

  constructor(
    private readonly db: Kysely<Database>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** `n` notifications went back to the outbox (committed). */
  noteRequeued(n: number): void {
    if (dialectOf(this.db).analyze === null || n <= 0) return
    this.count += n
    this.schedule()
  }

  /** Resolves once every analyze asked for so far has run (tests, and a server stopping). */
  async settled(): Promise<void> {
    while (this.pending !== null) await this.pending
  }

  private schedule(): void {
    if (this.count < REQUEUED_FOR_ANALYZE || this.pending !== null) return
    this.pending = new Promise<void>((resolve) => setTimeout(resolve, ANALYZE_AFTER_MS).unref())
      .then(() => {
        this.count = 0
        return this.analyze()
      })
      .finally(() => {
        this.pending = null
        // What went back while it ran counts towards the next one.
        this.schedule()
      })
  }

  private async analyze(): Promise<void> {
    try {
      await dialectOf(this.db).analyze?.('webhook_notifications').execute(this.db)
    } catch (err) {
      this.onError(err)
    }
  }
}
