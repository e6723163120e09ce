import type { Kysely } from 'kysely'
import type { PreparedArrays, RawSqlite } from '../db/database.js'
import type { Database, NotificationState } from '../db/schema.js'
import { type AttemptRow, type LogTarget, type NextState, writeAttempts } from './delivery-log-sql.js'
import type { RetryPolicy } from './retry-policy.js'
import type { WebhookOutcome } from './webhook-outcome.js'

export interface AttemptRecord {
  attempt: number
  sentAt: number
  url: string
  /** POST unless said (a webhook behavior may send GET). */
  method?: 'POST' | 'GET'
  headers: Record<string, string>
  body: string
  outcome: WebhookOutcome
  now: number
}

export interface DeliveryLog {
  /** Id of the log record (what the retry endpoint takes). */
  id: number
  attempt: number
  state: NotificationState
  outcome: WebhookOutcome
}

interface ClaimedNotification {
  id: number
  site_id: number
  user_id: number | null
  operation: string
  path: string
  folder: string
  max_attempts: number
  behavior_id?: number | null
}

/** The notification's next state after an attempt. */
function nextState(policy: RetryPolicy, n: ClaimedNotification, r: AttemptRecord) {
  const { outcome } = r
  if (outcome.success) return { state: 'delivered' as NotificationState, next: null }
  if (r.attempt >= policy.maxAttempts(n.max_attempts))
    return { state: 'failed' as NotificationState, next: null }
  const retryAfter = outcome.status === 429 || outcome.status === 503 ? outcome.retryAfterSeconds : null
  return { state: 'pending' as NotificationState, next: r.now + policy.delayMs(r.attempt, retryAfter) }
}

interface Queued {
  n: ClaimedNotification
  r: AttemptRecord
  resolve: (log: DeliveryLog) => void
  reject: (err: unknown) => void
}

/**
 * Records attempts and their notifications' next state. Attempts that end together are written
 * in one transaction (one commit for many deliveries), and each caller learns its record's id
 * once that transaction commits. The update applies only while this worker still holds the
 * claim; if its lease ran out and another worker took over, that one decides.
 */
export class DeliveryLogWriter {
  private queue: Queued[] = []
  private flushing: Promise<void> | null = null
  private readonly target: LogTarget

  constructor(
    db: Kysely<Database>,
    private readonly policy: RetryPolicy,
    private readonly owner: string,
    /** SQLite: the connection itself, for the log's two statements; PostgreSQL: prepared statements. */
    direct: { raw?: RawSqlite | undefined; prepared?: PreparedArrays | undefined } = {},
    private readonly maxBatch = 256,
    /** Called after each batch commits (its notifications' new states are visible). */
    private readonly written?: () => void,
  ) {
    this.target = { db, raw: direct.raw, prepared: direct.prepared }
  }

  record(n: ClaimedNotification, r: AttemptRecord): Promise<DeliveryLog> {
    return new Promise((resolve, reject) => {
      this.queue.push({ n, r, resolve, reject })
      if (!this.flushing) this.flushing = this.drain()
    })
  }

  /** Resolves once everything recorded so far is written. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing
  }

  private async drain(): Promise<void> {
    // Let the attempts ending in this turn of the event loop join the batch.
    await new Promise((r) => setImmediate(r))
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch)
      try {
        const logs = await this.write(batch)
        for (const [i, q] of batch.entries()) q.resolve(logs[i]!)
        this.written?.()
      } catch (err) {
        for (const q of batch) q.reject(err)
      }
    }
    this.flushing = null
  }

  private async write(batch: Queued[]): Promise<DeliveryLog[]> {
    const rows: AttemptRow[] = []
    const states: NextState[] = []
    const logs: DeliveryLog[] = []
    for (const { n, r } of batch) {
      rows.push({
        site_id: n.site_id,
        notification_id: n.id,
        attempt: r.attempt,
        created_at: r.sentAt,
        user_id: n.user_id,
        operation: n.operation,
        status: r.outcome.status,
        message: r.outcome.message,
        success: r.outcome.success ? 1 : 0,
        request_headers: JSON.stringify(r.headers),
        request_method: r.method ?? 'POST',
        request_url: r.url,
        request_body: r.body,
        path: n.path,
        folder: n.folder,
        response_size: r.outcome.responseSize,
        // PostgreSQL text cannot hold NUL, and one unstorable record would stall the batch.
        response_body: r.outcome.responseBody.replaceAll('\u0000', '\ufffd'),
        duration_ms: Math.round(r.outcome.durationMs),
        behavior_id: n.behavior_id ?? null,
      })
      const { state, next } = nextState(this.policy, n, r)
      states.push({ id: n.id, attempts: r.attempt, state, next, now: r.now })
      logs.push({ id: 0, attempt: r.attempt, state, outcome: r.outcome })
    }
    const inserted = await writeAttempts(this.target, this.owner, rows, states)
    const idOf = new Map<string, number>()
    for (const row of inserted) idOf.set(`${row.notification_id}:${row.attempt}`, Number(row.id))
    for (const [i, { n }] of batch.entries()) {
      const log = logs[i]!
      log.id = idOf.get(`${n.id}:${log.attempt}`)!
    }
    return logs
  }
}

/**
 * Deletes log records older than the retention, and finished notifications not touched since,
 * in batches so no statement holds the database for long. Returns how many rows went.
 */
export async function pruneDeliveryLog(db: Kysely<Database>, cutoff: number, batch = 5000): Promise<number> {
  let removed = 0
  // Site by site: the log's index starts with the site, so each batch is a range read, not a
  // scan of the whole log.
  const sites = await db.selectFrom('sites').select('id').execute()
  for (const { id: siteId } of sites) {
    for (;;) {
      const old = db
        .selectFrom('webhook_attempts')
        .select('id')
        .where('site_id', '=', siteId)
        .where('created_at', '<', cutoff)
        .limit(batch)
      const res = await db.deleteFrom('webhook_attempts').where('id', 'in', old).executeTakeFirst()
      const n = Number(res.numDeletedRows)
      removed += n
      if (n < batch) break
    }
  }
  for (;;) {
    const old = db
      .selectFrom('webhook_notifications')
      .select('id')
      .where('created_at', '<', cutoff)
      // Held ones too: a paused or disabled endpoint's notifications are kept as long as the log.
      .where('state', 'in', ['delivered', 'failed', 'dropped', 'held'])
      .where('updated_at', '<', cutoff)
      .limit(batch)
    const res = await db.deleteFrom('webhook_notifications').where('id', 'in', old).executeTakeFirst()
    const n = Number(res.numDeletedRows)
    removed += n
    if (n < batch) break
  }
  return removed
}

/** The notification of a failed attempt of the site's log, or undefined when there is none. */
export function failedAttempt(db: Kysely<Database>, siteId: number, attemptId: number) {
  return db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_notifications as n', 'n.id', 'a.notification_id')
    .select(['n.id', 'n.attempts', 'n.max_attempts', 'n.operation', 'n.state', 'n.url', 'n.behavior_id'])
    .where('a.id', '=', attemptId)
    .where('a.site_id', '=', siteId)
    .where('a.success', '=', 0)
    .executeTakeFirst()
}
