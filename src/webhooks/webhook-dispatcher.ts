import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { PreparedArrays, RawSqlite } from '../db/database.js'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database } from '../db/schema.js'
import { JobLoop } from '../jobs/job-loop.js'
import { LeasedJobs } from '../jobs/leased-jobs.js'
import { metrics } from '../metrics/metrics.js'
import {
  type BehaviorSending,
  type BehaviorWebhook,
  behaviorRequest,
  loadBehaviorWebhooks,
} from './behavior-webhooks.js'
import { type DeliveryLog, DeliveryLogWriter } from './delivery-log.js'
import { endpointsForBatch, holding } from './endpoints/endpoint-gate.js'
import type { EndpointHealth } from './endpoints/endpoint-health.js'
import { EndpointLimits } from './endpoints/endpoint-limits.js'
import { holdClaimed } from './endpoints/endpoint-queue.js'
import type { EndpointRow } from './endpoints/endpoint-rows.js'
import { type FileLinks, fileFields as fieldsOfFile } from './endpoints/file-fields.js'
import { findWebhookSettings, type WebhookSettings } from './listener-settings.js'
import { type ClaimedRow, claimNotifications, KIND, type NotificationRow, PENDING } from './outbox-claims.js'
import type { RetryPolicy } from './retry-policy.js'
import { SiteNames } from './site-names.js'
import { notHeldBack } from './webhook-ordering.js'
import { outboxSignal } from './webhook-outbox.js'
import type { WebhookOutcome } from './webhook-outcome.js'
import type { WebhookSender } from './webhook-sender.js'
import { signWebhook } from './webhook-signature.js'

export type { ClaimedRow, NotificationRow }

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
  /** PostgreSQL: prepared statements with rows as arrays, for the same (and the settings with the claim). */
  prepared?: PreparedArrays | undefined
  /** Keeps each endpoint's health from the outcomes (and disables one that keeps failing). */
  health?: EndpointHealth | undefined
  /** What a file-aware endpoint's download links are made with. */
  fileLinks?: FileLinks | undefined
  /**
   * Per-path ordering (webhook-ordering.ts): a notification waits while an older one of its path
   * and endpoint is pending with fewer attempts than this. 0 sends every path's unordered.
   */
  orderHold?: number
}

/** After this many failures in a row a site's listener gets one request at a time. */
const FAILING_AFTER = 3

interface SiteState {
  failures: number
  inflight: number
}

/** A claimed notification waiting for a slot, with the settings its claim read. */
interface Waiting {
  row: ClaimedRow
  settings: WebhookSettings | undefined
  /** A behavior's notification: its webhook behavior as the claim found it (absent: deleted). */
  behavior?: BehaviorWebhook | undefined
  /** Its endpoint as the claim found it (absent: none kept, e.g. a behavior's test). */
  endpoint?: EndpointRow | undefined
  /** When it was claimed (one held back by its endpoint's limits goes back before its lease ends). */
  claimedAt?: number
}

/**
 * Delivers the outbox: claims due notifications with a lease (jobs/leased-jobs.ts: several
 * processes share the work), sends each through the sender, and logs every attempt with the
 * notification's next state in one transaction.
 *
 * First attempts always have room: retries use at most half the pool. A listener that keeps
 * failing gets one request at a time until it answers again, so it is not hammered and cannot
 * hold the pool.
 */
export class WebhookDispatcher extends JobLoop {
  private readonly jobs: LeasedJobs<'webhook_notifications'>
  private readonly sites = new Map<number, SiteState>()
  private readonly running = new Set<Promise<unknown>>()
  private readonly siteNames: SiteNames
  private inflight = 0
  private inflightRetries = 0
  /**
   * Notifications claimed ahead of the slots: a slot that frees starts the next at once instead
   * of waiting for a claim's round trip, during which, on PostgreSQL, most slots stood idle.
   */
  private readonly waiting: Waiting[] = []
  private readonly ahead: number
  private kickQueued = false
  private unlisten: (() => Promise<void>) | null = null
  private readonly log: DeliveryLogWriter
  /** Each endpoint's concurrency cap and rate limit. */
  private readonly limits = new EndpointLimits()
  private limitTimer: NodeJS.Timeout | null = null
  private readonly hold: number
  /** The last claim found fewer due notifications than it had room for (some may be held back). */
  private lastClaimShort = true

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sender: Pick<WebhookSender, 'send'>,
    policy: RetryPolicy,
    private readonly now: () => number,
    private readonly opts: DispatcherOptions,
  ) {
    super(opts.pollMs ?? 2000, opts.logger, 'webhook dispatcher could not read the outbox')
    this.jobs = new LeasedJobs(db, dialectOf(db), 'webhook_notifications', {
      leaseMs: opts.leaseMs,
      now,
      sqlite: opts.sqlite,
      prepared: opts.prepared,
    })
    this.hold = opts.orderHold ?? 0
    this.log = new DeliveryLogWriter(
      db,
      policy,
      this.owner,
      { raw: opts.sqlite, prepared: opts.prepared },
      undefined,
      // A notification's state written may free the next one of its path: look again (as a
      // freed slot does, so a busy dispatcher still claims a quarter of its pool at a time).
      // Only after a claim that found less than it had room for: while due rows were left over,
      // the deliveries ending look again anyway.
      this.hold > 0 ? () => this.lastClaimShort && this.lookSoon() : undefined,
    )
    this.siteNames = new SiteNames(db)
    this.ahead = Math.ceil(opts.concurrency / 2)
  }

  /** Who holds this dispatcher's claims (a notification inserted already claimed names it). */
  get owner(): string {
    return this.jobs.owner
  }

  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.opts.releaseClaimsOnStart) await this.jobs.releaseLeftOver(PENDING)
    outboxSignal.on('enqueued', this.kick)
    if (this.opts.listen) this.unlisten = await this.opts.listen(this.kick)
    this.kick()
  }

  /** Stops claiming, then waits for the deliveries in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    if (this.stopped) return
    outboxSignal.off('enqueued', this.kick)
    if (this.limitTimer !== null) clearTimeout(this.limitTimer)
    this.limitTimer = null
    await this.halt(async () => {
      await this.unlisten?.()
      this.unlisten = null
    })
    // What was claimed ahead goes back at once, for another process (or this one restarted)
    // rather than after its lease.
    const left = this.waiting.splice(0)
    await Promise.allSettled(left.map((w) => this.jobs.release(w.row.id)))
    await Promise.allSettled([...this.running])
    await this.log.idle()
  }

  /**
   * Sends one notification this process has already claimed, and reports the outcome: the test
   * endpoint uses it to answer with the listener's response.
   */
  async deliverClaimed(row: NotificationRow, test?: BehaviorSending): Promise<DeliveryLog | null> {
    if (test !== undefined) return this.deliverToBehavior(row, test)
    return this.deliver(row, await findWebhookSettings(this.db, row.site_id))
  }

  /** How many more notifications this process may hold: its slots and the claims ahead of them. */
  private get room(): number {
    return this.opts.concurrency + this.ahead - this.inflight - this.waiting.length
  }

  protected override async look(): Promise<boolean> {
    const room = this.room
    const rows = await this.claimBatch(room)
    // Oldest first within a batch, retries among them: an endpoint taking one request at a time
    // gets what it kept while paused or disabled in the order it was made.
    rows.sort((a, b) => a.id - b.id)
    // Settings are read once per batch: a change applies to every claim made after it. Where
    // the claim read them itself (PostgreSQL), that is the same statement.
    const settings = new Map<number, WebhookSettings | undefined>()
    for (const row of rows) {
      if (row.settings !== undefined) settings.set(row.site_id, row.settings ?? undefined)
    }
    for (const siteId of new Set(rows.map((r) => r.site_id))) {
      if (!settings.has(siteId)) settings.set(siteId, await findWebhookSettings(this.db, siteId))
    }
    // Behaviors too: one statement for every behavior of the batch.
    const behaviorIds = rows.flatMap((r) => (r.behavior_id === null ? [] : [r.behavior_id]))
    const behaviors = await loadBehaviorWebhooks(this.db, behaviorIds)
    const endpoints = await endpointsForBatch(this.db, rows, this.now())
    for (const [i, row] of rows.entries()) {
      const endpoint = endpoints[i]
      // A paused or disabled endpoint's notifications are kept, not sent (endpoints/).
      if (
        holding(endpoint, row) &&
        (await holdClaimed(this.db, row.id, this.owner, endpoint!.id, this.now()))
      )
        continue
      const behavior = row.behavior_id === null ? undefined : behaviors.get(row.behavior_id)
      this.waiting.push({
        row,
        settings: settings.get(row.site_id),
        behavior,
        endpoint,
        claimedAt: this.now(),
      })
    }
    this.launchWaiting()
    this.lastClaimShort = rows.length < room
    // Only once the due rows ran out does the next due time matter; while slots are all busy,
    // deliveries ending look again.
    return rows.length < room
  }

  /** Starts claimed notifications while slots are free, the oldest claim first. */
  private launchWaiting(): void {
    let i = 0
    let limitedFor = 0
    while (!this.stopped && this.inflight < this.opts.concurrency && i < this.waiting.length) {
      const { row, settings, behavior, endpoint } = this.waiting[i]!
      const site = this.siteState(row.site_id)
      // The site's listener began failing since the claim: one request at a time, so this one
      // goes back to the outbox (its own claim takes it when the site has nothing in flight).
      if (site.failures >= FAILING_AFTER && site.inflight > 0) {
        this.giveBack(i)
        continue
      }
      // Its endpoint is at its concurrency cap or out of its rate: it waits, in its order, and
      // the others go by.
      if (!this.limits.tryStart(endpoint)) {
        // Held back past half its lease: back to the outbox, so no other process sends it while
        // this one still holds it.
        if (this.now() - (this.waiting[i]!.claimedAt ?? 0) > this.opts.leaseMs / 2) {
          this.giveBack(i)
          continue
        }
        const wait = this.limits.retryIn(endpoint)
        if (wait > 0 && (limitedFor === 0 || wait < limitedFor)) limitedFor = wait
        i++
        continue
      }
      this.waiting.splice(i, 1)
      this.launch(row, settings, behavior, endpoint)
    }
    if (limitedFor > 0 && this.limitTimer === null && !this.stopped) {
      this.limitTimer = setTimeout(() => {
        this.limitTimer = null
        this.launchWaiting()
      }, limitedFor)
      this.limitTimer.unref()
    }
  }

  /**
   * A slot came free: the next claimed notification takes it. Looking at the outbox for each one
   * would cost a claim per delivery, so claims are made a quarter of the pool at a time (or when
   * nothing is in flight); deliveries ending in the same turn of the event loop share one look.
   */
  private slotFreed(): void {
    this.launchWaiting()
    this.lookSoon()
  }

  /** Takes the i-th waiting notification off the queue and gives its claim back to the outbox. */
  private giveBack(i: number): void {
    const [{ row }] = this.waiting.splice(i, 1) as [Waiting]
    void this.jobs.release(row.id).catch((err: unknown) => {
      this.opts.logger?.error({ err, notification: row.id }, 'webhook claim could not be released')
    })
  }

  /** Looks at the outbox in the next turn, unless busy: then a delivery ending does it. */
  private lookSoon(): void {
    if (this.room < Math.max(1, Math.floor(this.opts.concurrency / 4)) && this.inflight > 0) return
    if (this.kickQueued) return
    this.kickQueued = true
    setImmediate(() => {
      this.kickQueued = false
      this.kick()
    })
  }

  private async claimBatch(room: number): Promise<ClaimedRow[]> {
    if (room <= 0) return []
    const failing = [...this.sites].filter(([, s]) => s.failures >= FAILING_AFTER).map(([id]) => id)
    const hold = this.hold
    const rows = await claimNotifications(this.jobs, 'first', room, { exclude: failing, hold })
    // Retries hold at most half the pool, claimed ahead or in flight.
    // (The claims ahead are at most half the concurrency: counting them costs little.)
    const waitingRetries = this.waiting.filter((w) => w.row.attempts > 0).length
    const retrySlots = Math.ceil(this.opts.concurrency / 2) - this.inflightRetries - waitingRetries
    const left = Math.min(room - rows.length, retrySlots)
    if (left > 0)
      rows.push(...(await claimNotifications(this.jobs, 'retry', left, { exclude: failing, hold })))
    // A failing listener: one request at a time, first attempts before retries.
    for (const siteId of failing) {
      if (rows.length >= room) break
      if ((this.sites.get(siteId)?.inflight ?? 0) > 0 || this.waiting.some((w) => w.row.site_id === siteId))
        continue
      const one = await claimNotifications(this.jobs, 'first', 1, { site: siteId, hold })
      rows.push(
        ...(one.length > 0 ? one : await claimNotifications(this.jobs, 'retry', 1, { site: siteId, hold })),
      )
    }
    return rows
  }

  /**
   * Milliseconds until the next unclaimed notification falls due, at most the poll interval
   * (which also bounds how long a crashed worker's expired claim waits). Two ordered index
   * reads, not a scan of the outbox.
   */
  protected override async nextLookIn(): Promise<number> {
    const now = this.now()
    let due: number | null = null
    for (const kind of ['first', 'retry'] as const) {
      let q = this.db
        .selectFrom('webhook_notifications')
        .select('next_attempt_at')
        .where(KIND[kind])
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      // A notification held back by an older one of its path is due once that one is written.
      if (this.hold > 0) q = q.where(notHeldBack(this.hold))
      const row = await q.orderBy('next_attempt_at').limit(1).executeTakeFirst()
      const at = row?.next_attempt_at
      if (at !== null && at !== undefined && (due === null || at < due)) due = at
    }
    // Due already but not claimed: held by a busy site or another process; a delivery's end
    // or the poll looks again.
    if (due === null || due <= now) return this.pollMs
    return Math.min(due - now, this.pollMs)
  }

  private launch(
    row: ClaimedRow,
    settings: WebhookSettings | undefined,
    behavior: BehaviorWebhook | undefined,
    endpoint: EndpointRow | undefined,
  ): void {
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
      this.limits.ended(endpoint)
      this.slotFreed()
    }
    const ended = () => {
      release()
      this.running.delete(p)
    }
    // One reaction for either ending (catch + finally would chain three promises per delivery).
    const delivery =
      row.url === null
        ? this.deliver(row, settings, release, endpoint)
        : this.deliverToBehavior(row, behavior, release, endpoint)
    const p: Promise<void> = delivery.then(ended, (err) => {
      this.opts.logger?.error({ err, notification: row.id }, 'webhook delivery failed')
      ended()
    })
    this.running.add(p)
  }

  private async deliver(
    row: ClaimedRow,
    settings: WebhookSettings | undefined,
    sent: () => void = () => {},
    endpoint?: EndpointRow,
  ): Promise<DeliveryLog | null> {
    const wanted =
      row.forced === 1 || (settings?.enabled === true && settings.triggers.some((t) => t === row.operation))
    if (!settings?.url || !wanted) {
      await this.drop(row)
      return null
    }
    const attempt = row.attempts + 1
    const sentAt = this.now()
    const accountname = this.siteNames.known(row.site_id) ?? (await this.siteNames.read(row.site_id))
    const fields = this.fileFieldsFor(row, endpoint)
    const extra = fields === undefined ? undefined : await fields
    const signed = signWebhook(
      {
        accountname,
        username: row.username,
        operation: row.operation,
        protocol: row.protocol,
        path: row.path,
        sourcepath: row.sourcepath,
        attempt,
        extra,
      },
      row.message_id,
      settings,
      sentAt,
      row.sequence ?? null,
    )
    const outcome = await this.sender.send({ url: settings.url, headers: signed.headers, body: signed.body })
    this.noteOutcome(row.site_id, outcome)
    metrics.webhookDelivered('site', outcome.success)
    sent()
    const log = await this.log.record(row, {
      attempt,
      sentAt,
      url: settings.url,
      headers: signed.headers,
      body: signed.body,
      outcome,
      now: this.now(),
    })
    const health = this.noteHealth(endpoint, outcome)
    if (health !== null) await health
    return log
  }

  /**
   * A webhook behavior's notification, to its URL, with the behavior's settings as they are now.
   * Dropped when the behavior was deleted or no longer has that URL, and a behavior's test whose
   * process died before sending (its settings were only that process's).
   */
  private async deliverToBehavior(
    row: ClaimedRow,
    behavior: BehaviorSending | undefined,
    sent: () => void = () => {},
    endpoint?: EndpointRow,
  ): Promise<DeliveryLog | null> {
    const url = row.url
    if (url === null || behavior === undefined || !behavior.urls.includes(url)) {
      await this.drop(row)
      return null
    }
    const attempt = row.attempts + 1
    const sentAt = this.now()
    const accountname = this.siteNames.known(row.site_id) ?? (await this.siteNames.read(row.site_id))
    const fields = this.fileFieldsFor(row, endpoint)
    const extra = fields === undefined ? undefined : await fields
    const req = behaviorRequest(
      behavior,
      url,
      {
        accountname,
        username: row.username,
        operation: row.operation,
        protocol: row.protocol,
        path: row.path,
        sourcepath: row.sourcepath,
        attempt,
        extra,
      },
      row.message_id,
      sentAt,
      row.sequence ?? null,
    )
    const outcome = await this.sender.send(req)
    metrics.webhookDelivered('behavior', outcome.success)
    sent()
    const log = await this.log.record(row, {
      attempt,
      sentAt,
      url: req.url,
      method: req.method,
      headers: req.loggedHeaders,
      body: req.loggedBody,
      outcome,
      now: this.now(),
    })
    const health = this.noteHealth(endpoint, outcome)
    if (health !== null) await health
    return log
  }

  /**
   * A file-aware endpoint's fields (endpoints/file-fields.ts); none otherwise, without a promise.
   * Awaited at once where it is made: left pending across another await, it could reject with no
   * handler yet.
   */
  private fileFieldsFor(row: ClaimedRow, endpoint: EndpointRow | undefined) {
    if (endpoint?.file_aware !== 1 || this.opts.fileLinks === undefined) return undefined
    return fieldsOfFile(this.db, this.opts.fileLinks, row, this.now())
  }

  /**
   * The endpoint's health after an attempt; a failure to write it costs no delivery. Null when
   * there is nothing to write (most successes), so the caller awaits nothing.
   */
  private noteHealth(endpoint: EndpointRow | undefined, outcome: WebhookOutcome): Promise<void> | null {
    if (endpoint === undefined || this.opts.health === undefined) return null
    const writing = this.opts.health.note(endpoint, outcome, this.now())
    return (
      writing?.catch((err: unknown) => {
        this.opts.logger?.error(
          { err, endpoint: endpoint.id },
          'webhook endpoint health could not be written',
        )
      }) ?? null
    )
  }

  /** The site turned webhooks (or this trigger) off before the notification went out. */
  private async drop(row: ClaimedRow): Promise<void> {
    await this.jobs.release(row.id, { state: 'dropped', next_attempt_at: null, updated_at: this.now() })
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
}
