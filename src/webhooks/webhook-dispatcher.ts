import crypto from 'node:crypto'
import os from 'node:os'
import { CompiledQuery, type Kysely, type Selectable, sql } from 'kysely'
import type { Logger } from 'pino'
import type { RawSqlite } from '../db/database.js'
import type { Database, WebhookNotificationsTable } from '../db/schema.js'
import { type DeliveryLog, DeliveryLogWriter } from './delivery-log.js'
import type { RetryPolicy } from './retry-policy.js'
import { isPostgresDb, outboxSignal } from './webhook-outbox.js'
import type { WebhookOutcome, WebhookSender } from './webhook-sender.js'
import { findWebhookSettings, type WebhookSettings } from './webhook-settings.js'
import { signWebhook } from './webhook-signature.js'

export type NotificationRow = Selectable<WebhookNotificationsTable>

/** The columns of a claimed notification that its delivery and log record use. */
const CLAIMED = [
  'id',
  'site_id',
  'message_id',
  'operation',
  'user_id',
  'username',
  'protocol',
  'path',
  'sourcepath',
  'folder',
  'attempts',
  'max_attempts',
  'forced',
] as const
export type ClaimedRow = Pick<NotificationRow, (typeof CLAIMED)[number]>

/**
 * A claimed row from better-sqlite3's array form (`raw`), in the order of CLAIMED: building the
 * object here costs a fraction of what the driver's objects cost, per row claimed.
 */
function claimedFromArray(a: unknown[]): ClaimedRow {
  return {
    id: a[0] as number,
    site_id: a[1] as number,
    message_id: a[2] as string,
    operation: a[3] as string,
    user_id: a[4] as number | null,
    username: a[5] as string,
    protocol: a[6] as string,
    path: a[7] as string,
    sourcepath: a[8] as string,
    folder: a[9] as string,
    attempts: a[10] as number,
    max_attempts: a[11] as number,
    forced: a[12] as number,
  }
}

export interface DispatcherOptions {
  /** Deliveries in flight at once in this process. */
  concurrency: number
  /** How long a claim lasts: longer than a request can take, so no one else sends it meanwhile. */
  leaseMs: number
  /** Longest sleep between looks at the outbox when nothing wakes the dispatcher. */
  pollMs?: number
  /** Subscribes to commits of other processes (LISTEN on PostgreSQL); returns the unsubscribe. */
  listen?: (onNotify: () => void) => Promise<() => Promise<void>>
  logger?: Logger | undefined
  /** Clears every claim at start (SQLite: no other process can hold one). */
  releaseClaimsOnStart?: boolean
  /** SQLite: the connection itself, for the usual claim and the delivery log (no Kysely executor). */
  sqlite?: RawSqlite | undefined
}

/** Literals, not parameters: SQLite uses the partial indexes on pending rows only then. */
const PENDING = sql<boolean>`state = 'pending'`
const KIND = {
  first: sql<boolean>`state = 'pending' and attempts = 0`,
  retry: sql<boolean>`state = 'pending' and attempts > 0`,
}
type Kind = keyof typeof KIND

/** The claim of due notifications of one kind, for every site (the partial index serves it). */
function claimSql(kind: Kind, pg: boolean): string {
  const p = pg ? (n: number) => `$${n}` : () => '?'
  return `update webhook_notifications set lease_owner = ${p(1)}, lease_until = ${p(2)}
    where id in (select id from webhook_notifications
      where state = 'pending' and attempts ${kind === 'first' ? '= 0' : '> 0'}
        and next_attempt_at <= ${p(3)} and (lease_until is null or lease_until < ${p(4)})
      order by next_attempt_at, id limit ${p(5)}${pg ? ' for update skip locked' : ''})
    returning ${CLAIMED.join(', ')}`
}

/** The claim's text for each kind and dialect, built once. */
const CLAIM_SQL = {
  first: { sqlite: claimSql('first', false), pg: claimSql('first', true) },
  retry: { sqlite: claimSql('retry', false), pg: claimSql('retry', true) },
}

/** After this many failures in a row a site's listener gets one request at a time. */
const FAILING_AFTER = 3

interface SiteState {
  failures: number
  inflight: number
}

/**
 * Delivers the outbox: claims due notifications with a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so several processes share the work), sends each through the sender, and logs
 * every attempt with the notification's next state in one transaction.
 *
 * First attempts always have room: retries use at most half the pool. A listener that keeps
 * failing gets one request at a time until it answers again, so it is not hammered and cannot
 * hold the pool.
 */
export class WebhookDispatcher {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`
  private readonly pollMs: number
  private readonly sites = new Map<number, SiteState>()
  private readonly running = new Set<Promise<unknown>>()
  private readonly siteNameReads = new Map<number, Promise<string>>()
  /** Site names once read, so that a delivery does not wait a turn for one. */
  private readonly siteNames = new Map<number, string>()
  private inflight = 0
  private inflightRetries = 0
  private stopped = true
  private pumping: Promise<void> | null = null
  private again = false
  private kickQueued = false
  private timer: NodeJS.Timeout | null = null
  private unlisten: (() => Promise<void>) | null = null
  private readonly log: DeliveryLogWriter

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sender: Pick<WebhookSender, 'send'>,
    policy: RetryPolicy,
    private readonly now: () => number,
    private readonly opts: DispatcherOptions,
  ) {
    this.pollMs = opts.pollMs ?? 2000
    this.log = new DeliveryLogWriter(db, policy, this.owner, opts.sqlite)
  }

  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.opts.releaseClaimsOnStart) {
      await this.db
        .updateTable('webhook_notifications')
        .set({ lease_owner: null, lease_until: null })
        .where(PENDING)
        .where('lease_owner', 'is not', null)
        .execute()
    }
    outboxSignal.on('enqueued', this.kick)
    if (this.opts.listen) this.unlisten = await this.opts.listen(this.kick)
    this.kick()
  }

  /** Stops claiming, then waits for the deliveries in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    outboxSignal.off('enqueued', this.kick)
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.unlisten?.()
    this.unlisten = null
    await this.pumping
    await Promise.allSettled([...this.running])
    await this.log.idle()
  }

  /** Look at the outbox now (a notification was enqueued or a delivery ended). */
  readonly kick = (): void => {
    if (this.stopped) return
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = null
      // A wake-up that came after the last claim (while the next due time was read, or as the
      // pump ended) was only noted: without this look it waited for the poll, or, when every
      // slot was busy as the pump ended, for the next wake-up.
      if (this.again) this.kick()
    })
  }

  /**
   * Sends one notification this process has already claimed, and reports the outcome: the test
   * endpoint uses it to answer with the listener's response.
   */
  async deliverClaimed(row: NotificationRow): Promise<DeliveryLog | null> {
    return this.deliver(row, await findWebhookSettings(this.db, row.site_id))
  }

  private async pump(): Promise<void> {
    let wait = this.pollMs
    try {
      let drained = false
      do {
        this.again = false
        const free = this.opts.concurrency - this.inflight
        const rows = await this.claimBatch()
        drained = rows.length < free
        // Settings are read once per batch: a change applies to every claim made after it.
        const settings = new Map<number, WebhookSettings | undefined>()
        for (const siteId of new Set(rows.map((r) => r.site_id))) {
          settings.set(siteId, await findWebhookSettings(this.db, siteId))
        }
        for (const row of rows) this.launch(row, settings.get(row.site_id))
      } while (this.again && !this.stopped)
      // Only once the due rows ran out does the next due time matter; while slots are all busy,
      // deliveries ending look again.
      if (drained) wait = await this.untilNextDue()
    } catch (err) {
      this.opts.logger?.error({ err }, 'webhook dispatcher could not read the outbox')
    }
    if (!this.stopped) {
      if (this.timer) clearTimeout(this.timer)
      this.timer = setTimeout(this.kick, wait)
      this.timer.unref()
    }
  }

  /**
   * A slot came free. Looking at the outbox for each one would cost a claim per delivery, so
   * slots are refilled a quarter of the pool at a time (or when all are free); deliveries ending
   * in the same turn of the event loop share one look.
   */
  private slotFreed(): void {
    const free = this.opts.concurrency - this.inflight
    if (free < Math.max(1, Math.floor(this.opts.concurrency / 4)) && this.inflight > 0) return
    if (this.kickQueued) return
    this.kickQueued = true
    setImmediate(() => {
      this.kickQueued = false
      this.kick()
    })
  }

  private async claimBatch(): Promise<ClaimedRow[]> {
    const free = this.opts.concurrency - this.inflight
    if (free <= 0) return []
    const failing = [...this.sites].filter(([, s]) => s.failures >= FAILING_AFTER).map(([id]) => id)
    const rows = await this.claim('first', free, { exclude: failing })
    const retrySlots = Math.ceil(this.opts.concurrency / 2) - this.inflightRetries
    const left = Math.min(free - rows.length, retrySlots)
    if (left > 0) rows.push(...(await this.claim('retry', left, { exclude: failing })))
    // A failing listener: one request at a time, first attempts before retries.
    for (const siteId of failing) {
      if (rows.length >= free) break
      if ((this.sites.get(siteId)?.inflight ?? 0) > 0) continue
      const one = await this.claim('first', 1, { site: siteId })
      rows.push(...(one.length > 0 ? one : await this.claim('retry', 1, { site: siteId })))
    }
    return rows
  }

  private async claim(
    kind: Kind,
    limit: number,
    by: { exclude?: number[]; site?: number },
  ): Promise<ClaimedRow[]> {
    const now = this.now()
    const db = this.db
    if (by.site === undefined && !by.exclude?.length) {
      // The usual claim, many times a second under load: a fixed statement, prepared once.
      const params = [this.owner, now + this.opts.leaseMs, now, now, limit]
      const raw = this.opts.sqlite
      if (raw) {
        const stmt = raw.statement(CLAIM_SQL[kind].sqlite)
        return raw.hold(() => (stmt.raw(true).all(params) as unknown[][]).map(claimedFromArray))
      }
      const claimed = await db.executeQuery<ClaimedRow>(
        CompiledQuery.raw(isPostgresDb(db) ? CLAIM_SQL[kind].pg : CLAIM_SQL[kind].sqlite, params),
      )
      return claimed.rows
    }
    let due = db
      .selectFrom('webhook_notifications')
      .select('id')
      .where(KIND[kind])
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    if (by.exclude && by.exclude.length > 0) due = due.where('site_id', 'not in', by.exclude)
    if (by.site !== undefined) due = due.where('site_id', '=', by.site)
    due = due.orderBy('next_attempt_at').orderBy('id').limit(limit)
    const locked = isPostgresDb(db) ? due.forUpdate().skipLocked() : due
    return db
      .updateTable('webhook_notifications')
      .set({ lease_owner: this.owner, lease_until: now + this.opts.leaseMs })
      .where('id', 'in', locked)
      .returning(CLAIMED)
      .execute()
  }

  /**
   * Milliseconds until the next unclaimed notification falls due, at most the poll interval
   * (which also bounds how long a crashed worker's expired claim waits). Two ordered index
   * reads, not a scan of the outbox.
   */
  private async untilNextDue(): Promise<number> {
    const now = this.now()
    let due: number | null = null
    for (const kind of ['first', 'retry'] as const) {
      const row = await this.db
        .selectFrom('webhook_notifications')
        .select('next_attempt_at')
        .where(KIND[kind])
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .orderBy('next_attempt_at')
        .limit(1)
        .executeTakeFirst()
      const at = row?.next_attempt_at
      if (at !== null && at !== undefined && (due === null || at < due)) due = at
    }
    // Due already but not claimed: held by a busy site or another process; a delivery's end
    // or the poll looks again.
    if (due === null || due <= now) return this.pollMs
    return Math.min(due - now, this.pollMs)
  }

  private launch(row: ClaimedRow, settings: WebhookSettings | undefined): void {
    const retry = row.attempts > 0
    const site = this.siteState(row.site_id)
    this.inflight++
    site.inflight++
    if (retry) this.inflightRetries++
    let held = true
    // The slot is free once the exchange with the listener ends; the claim still covers the
    // notification until its record commits, so freeing early sends nothing twice.
    const release = () => {
      if (!held) return
      held = false
      this.inflight--
      site.inflight--
      if (retry) this.inflightRetries--
      this.slotFreed()
    }
    const ended = () => {
      release()
      this.running.delete(p)
    }
    // One reaction for either ending (catch + finally would chain three promises per delivery).
    const p: Promise<void> = this.deliver(row, settings, release).then(ended, (err) => {
      this.opts.logger?.error({ err, notification: row.id }, 'webhook delivery failed')
      ended()
    })
    this.running.add(p)
  }

  private async deliver(
    row: ClaimedRow,
    settings: WebhookSettings | undefined,
    sent: () => void = () => {},
  ): Promise<DeliveryLog | null> {
    const wanted =
      row.forced === 1 || (settings?.enabled === true && settings.triggers.some((t) => t === row.operation))
    if (!settings?.url || !wanted) {
      await this.drop(row)
      return null
    }
    const attempt = row.attempts + 1
    const sentAt = this.now()
    const signed = signWebhook(
      {
        accountname: this.siteNames.get(row.site_id) ?? (await this.siteName(row.site_id)),
        username: row.username,
        operation: row.operation,
        protocol: row.protocol,
        path: row.path,
        sourcepath: row.sourcepath,
        attempt,
      },
      row.message_id,
      settings,
      sentAt,
    )
    const outcome = await this.sender.send({ url: settings.url, headers: signed.headers, body: signed.body })
    this.noteOutcome(row.site_id, outcome)
    sent()
    return await this.log.record(row, {
      attempt,
      sentAt,
      url: settings.url,
      headers: signed.headers,
      body: signed.body,
      outcome,
      now: this.now(),
    })
  }

  /** The site turned webhooks (or this trigger) off before the notification went out. */
  private async drop(row: ClaimedRow): Promise<void> {
    await this.db
      .updateTable('webhook_notifications')
      .set({
        state: 'dropped',
        next_attempt_at: null,
        lease_owner: null,
        lease_until: null,
        updated_at: this.now(),
      })
      .where('id', '=', row.id)
      .where('lease_owner', '=', this.owner)
      .execute()
  }

  private noteOutcome(siteId: number, outcome: WebhookOutcome): void {
    const site = this.siteState(siteId)
    site.failures = outcome.success ? 0 : site.failures + 1
  }

  private siteState(siteId: number): SiteState {
    let s = this.sites.get(siteId)
    if (!s) {
      s = { failures: 0, inflight: 0 }
      this.sites.set(siteId, s)
    }
    return s
  }

  /** `accountname`: the site's name, set at start-up from SITE_NAME (one read per site). */
  private siteName(siteId: number): Promise<string> {
    let name = this.siteNameReads.get(siteId)
    if (name === undefined) {
      name = this.db
        .selectFrom('sites')
        .select('name')
        .where('id', '=', siteId)
        .executeTakeFirstOrThrow()
        .then((site) => {
          this.siteNames.set(siteId, site.name)
          return site.name
        })
      name.catch(() => this.siteNameReads.delete(siteId))
      this.siteNameReads.set(siteId, name)
    }
    return name
  }
}
