import { type Kysely, type SqlBool, sql } from 'kysely'
import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { isWithin } from '../../api/paths.js'
import { selectPage } from '../../db/list-sql.js'
import type { Database } from '../../db/schema.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { announce, type EndpointAlerts } from '../../webhooks/endpoints/endpoint-health.js'
import {
  countRecoverable,
  discardQueued,
  OutboxStatistics,
  queuedOf,
  type RecoverRange,
  recover,
  releaseHeld,
} from '../../webhooks/endpoints/endpoint-queue.js'
import {
  type EndpointRow,
  endpointKey,
  normalized,
  ofEndpoint,
  syncEndpoints,
} from '../../webhooks/endpoints/endpoint-rows.js'
import type { RetryPolicy } from '../../webhooks/retry-policy.js'
import { signalOutbox } from '../../webhooks/webhook-outbox.js'
import { readListRequest } from '../list-request.js'
import type { PermissionRepository } from '../permissions/permission-repository.js'

export const ENDPOINT_LIST: ListSpec = {
  name: 'webhook_endpoints',
  idColumn: 'e.id',
  sort: { state: { column: 'e.state', type: 'string' } },
  filter: {
    state: { column: 'e.state', type: 'string' },
    behavior_id: { column: 'e.behavior_id', type: 'integer' },
  },
}

export const ATTEMPT_LIST: ListSpec = {
  name: 'webhook_endpoint_attempts',
  idColumn: 'a.id',
  sort: {},
  filter: { success: { column: 'a.success', type: 'integer' } },
}

/** Success rate and latency over a window of the delivery log. */
interface Window {
  attempts: number
  success_rate: number | null
  latency_p50_ms: number | null
  latency_p99_ms: number | null
}

/** The WebhookEndpoint resource: an endpoint with its health. */
export interface EndpointJson {
  id: number
  behavior_id: number | null
  /** The folder of the behavior; null for the site listener. */
  path: string | null
  url: string
  state: string
  consecutive_failures: number
  failing_since: string | null
  last_success_at: string | null
  last_failure_at: string | null
  last_failure_reason: string | null
  disabled_at: string | null
  disabled_reason: string | null
  rate_limit: number | null
  concurrency: number | null
  file_aware: boolean
  queued_count: number
  oldest_queued_at: string | null
  oldest_queued_age_seconds: number | null
  hour_attempts: number
  hour_success_rate: number | null
  hour_latency_p50_ms: number | null
  hour_latency_p99_ms: number | null
  day_attempts: number
  day_success_rate: number | null
  day_latency_p50_ms: number | null
  day_latency_p99_ms: number | null
}

export interface EndpointChange {
  state?: string | undefined
  rate_limit?: number | null | undefined
  concurrency?: number | null | undefined
  file_aware?: boolean | undefined
  discard_queued?: boolean | undefined
}

export interface RecoverInput {
  since?: string | undefined
  until?: string | undefined
  only_failed?: boolean | undefined
  dry_run?: boolean | undefined
}

export interface RecoverResult {
  endpoint_id: number
  dry_run: boolean
  count: number
}

/** One attempt of a notification to an endpoint. */
export interface AttemptJson {
  id: number
  endpoint_id: number
  notification_id: number
  event_id: string
  attempt: number
  status: 'success' | 'failure'
  response_code: number | null
  response_body: string
  latency_ms: number
  error: string | null
  next_attempt_at: string | null
  created_at: string
  path: string
  operation: string
}

const HOUR = 3600_000
const DAY = 24 * HOUR
/** Log records a window's figures read at most (the newest). */
const WINDOW_ROWS = 100_000
/** Longer than a request and its log write can take (webhook-sender's total timeout and more). */
const WINDOW_SLACK_MS = 5 * 60_000

type Row = EndpointRow & { path: string | null }

/**
 * Webhook endpoints (the site listener and each URL of each webhook behavior): their health,
 * what an operator sets on them (pause, limits, file-aware bodies), recovery of past
 * notifications and their attempts. Site admins see every endpoint; folder admins those of the
 * webhook behaviors inside their folders, as for behaviors.
 */
export class WebhookEndpointService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly secrets: SiteSecrets,
    private readonly permissions: PermissionRepository,
    private readonly policy: RetryPolicy,
    private readonly alerts: EndpointAlerts,
    private readonly now: () => number,
  ) {
    this.statistics = new OutboxStatistics(db, (err) =>
      alerts.logger?.warn({ err }, 'the webhook outbox could not be analyzed after a release'),
    )
  }

  /** The outbox's statistics, gathered again after many notifications went back to it. */
  readonly statistics: OutboxStatistics

  async list(p: Principal, query: Record<string, unknown>): Promise<Page<EndpointJson>> {
    const folders = await this.scopeOf(p)
    await syncEndpoints(this.db, p.siteId, this.now())
    const list = await readListRequest(this.secrets, p.siteId, ENDPOINT_LIST, query)
    let q = this.selectRows(p.siteId)
    if (folders !== null) q = q.where(withinFolders(folders))
    const page = await selectPage(q, list)
    const items = await Promise.all(page.items.map((r) => this.render(r as Row)))
    return mapPage({ ...page, items }, (x) => x)
  }

  async get(p: Principal, id: number): Promise<EndpointJson> {
    return this.render(await this.managed(p, id))
  }

  /**
   * PATCH: `state` enabled or paused; limits; file-aware bodies. Enabling a paused or disabled
   * endpoint sends what it kept, in order, unless `discard_queued` (which, alone or with
   * `paused`, discards what is kept now).
   */
  async update(p: Principal, id: number, input: EndpointChange): Promise<EndpointJson> {
    const row = await this.managed(p, id)
    if (input.state !== undefined && input.state !== 'enabled' && input.state !== 'paused') {
      throw ApiError.modelSave({
        state: [`must be enabled or paused (${input.state} is set by delivery, not by request)`],
      })
    }
    const now = this.now()
    const changes: Record<string, unknown> = { updated_at: now }
    if (input.rate_limit !== undefined) changes['rate_limit'] = input.rate_limit
    if (input.concurrency !== undefined) changes['concurrency'] = input.concurrency
    if (input.file_aware !== undefined) changes['file_aware'] = input.file_aware ? 1 : 0
    const enabling = input.state === 'enabled' && row.state !== 'enabled' && row.state !== 'failing'
    if (input.state === 'paused') changes['state'] = 'paused'
    if (enabling) Object.assign(changes, { state: 'enabled', consecutive_failures: 0, failing_since: null })
    let released = 0
    const after = await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('webhook_endpoints').set(changes).where('id', '=', row.id).execute()
      if (input.discard_queued === true) await discardQueued(trx, row, now)
      if (enabling) released = await releaseHeld(trx, row, now)
      if (released > 0) await signalOutbox(trx, p.siteId)
      return (await this.find(p.siteId, row.id, trx))!
    })
    this.statistics.noteRequeued(released)
    if (enabling && row.state === 'disabled')
      await announce(this.db, 'webhook_endpoint.enabled', after, now, this.alerts)
    return this.render(after)
  }

  /** POST /webhook_endpoints/{id}/recover: past notifications sent again (or counted: `dry_run`). */
  async recover(p: Principal, id: number, input: RecoverInput): Promise<RecoverResult> {
    const row = await this.managed(p, id)
    const range: RecoverRange = {
      since: input.since === undefined ? null : parseDateTime(input.since, 'since'),
      until: input.until === undefined ? null : parseDateTime(input.until, 'until'),
      onlyFailed: input.only_failed === true,
    }
    if (range.since !== null && range.until !== null && range.since >= range.until) {
      throw ApiError.modelSave({ until: ['must be after since'] })
    }
    if (input.dry_run === true) {
      return { endpoint_id: row.id, dry_run: true, count: await countRecoverable(this.db, row, range) }
    }
    const now = this.now()
    const count = await this.db.transaction().execute(async (trx) => {
      const n = await recover(trx, row, range, this.policy.maxAttempts(0), now)
      if (n > 0) await signalOutbox(trx, p.siteId)
      return n
    })
    this.statistics.noteRequeued(count)
    return { endpoint_id: row.id, dry_run: false, count }
  }

  /** GET /webhook_endpoints/{id}/attempts: every attempt to the endpoint, oldest first. */
  async attempts(p: Principal, id: number, query: Record<string, unknown>): Promise<Page<AttemptJson>> {
    const e = await this.managed(p, id)
    const list = await readListRequest(this.secrets, p.siteId, ATTEMPT_LIST, query, { endpoint: e.id })
    let q = this.db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_notifications as n', 'n.id', 'a.notification_id')
      .select([
        'a.id',
        'a.notification_id',
        'a.attempt',
        'a.success',
        'a.status',
        'a.message',
        'a.response_body',
        'a.duration_ms',
        'a.created_at',
        'a.path',
        'a.operation',
        'n.message_id',
        'n.state',
        'n.attempts as n_attempts',
        'n.next_attempt_at',
      ])
      .where('a.site_id', '=', p.siteId)
      .where(ofEndpoint(e, 'n'))
    if (e.behavior_id === null) q = q.where('a.request_url', '=', e.url)
    const page = await selectPage(q, list)
    return mapPage(page, (r) => {
      const last = Number(r.n_attempts) === Number(r.attempt) && r.state === 'pending'
      const http = r.status >= 100
      return {
        id: Number(r.id),
        endpoint_id: e.id,
        notification_id: Number(r.notification_id),
        event_id: r.message_id,
        attempt: Number(r.attempt),
        status: r.success === 1 ? 'success' : 'failure',
        response_code: http ? Number(r.status) : null,
        response_body: r.response_body,
        latency_ms: Number(r.duration_ms),
        error: r.success === 1 ? null : r.message,
        next_attempt_at: last
          ? formatDateTime(r.next_attempt_at === null ? null : Number(r.next_attempt_at))
          : null,
        created_at: formatDateTime(Number(r.created_at))!,
        path: r.path,
        operation: r.operation,
      }
    })
  }

  /**
   * POST /webhook_attempts/{id}/resend: the attempt's notification goes out again now, with its
   * event id, whatever its state (delivered too: a resend is asked for), as its next attempt.
   */
  async resend(p: Principal, attemptId: number): Promise<void> {
    const found = await this.db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_notifications as n', 'n.id', 'a.notification_id')
      .select(['n.id', 'n.behavior_id', 'n.url', 'n.attempts', 'n.max_attempts'])
      .where('a.id', '=', attemptId)
      .where('a.site_id', '=', p.siteId)
      .executeTakeFirst()
    const key = found
      ? endpointKey(found.behavior_id === null ? null : Number(found.behavior_id), found.url)
      : null
    const e = key === null ? undefined : await this.findByKey(p.siteId, key)
    if (!found || !e) throw ERRORS.notFound(`No webhook attempt of an endpoint has id ${attemptId}`)
    await this.reach(p, e)
    const now = this.now()
    const allowed = Math.max(this.policy.maxAttempts(Number(found.max_attempts)), Number(found.attempts) + 1)
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('webhook_notifications')
        .set({
          state: 'pending',
          forced: 1,
          max_attempts: sql<number>`case when attempts + 1 > ${allowed} then attempts + 1 else ${allowed} end`,
          next_attempt_at: now,
          updated_at: now,
        })
        .where('id', '=', Number(found.id))
        // One being sent right now is sent already.
        .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('state', '!=', 'pending')]))
        .execute()
      await signalOutbox(trx, p.siteId)
    })
  }

  private selectRows(siteId: number) {
    return this.db
      .selectFrom('webhook_endpoints as e')
      .leftJoin('behaviors as b', 'b.id', 'e.behavior_id')
      .selectAll('e')
      .select('b.path as path')
      .where('e.site_id', '=', siteId)
  }

  private async find(siteId: number, id: number, db = this.db): Promise<Row | undefined> {
    const r = await db
      .selectFrom('webhook_endpoints as e')
      .leftJoin('behaviors as b', 'b.id', 'e.behavior_id')
      .selectAll('e')
      .select('b.path as path')
      .where('e.site_id', '=', siteId)
      .where('e.id', '=', id)
      .executeTakeFirst()
    return r ? { ...normalized(r), path: r.path ?? null } : undefined
  }

  private async findByKey(siteId: number, key: string): Promise<Row | undefined> {
    const r = await this.selectRows(siteId).where('e.endpoint_key', '=', key).executeTakeFirst()
    return r ? { ...normalized(r), path: r.path ?? null } : undefined
  }

  /** The endpoint if the caller may manage it; else 404 or the refusal. */
  private async managed(p: Principal, id: number): Promise<Row> {
    await this.scopeOf(p)
    let row = await this.find(p.siteId, id)
    if (!row) {
      await syncEndpoints(this.db, p.siteId, this.now())
      row = await this.find(p.siteId, id)
    }
    if (!row) throw ERRORS.notFound(`Webhook endpoint ${id} not found`)
    await this.reach(p, row)
    return row
  }

  private async reach(p: Principal, e: Row): Promise<void> {
    const folders = await this.scopeOf(p)
    if (folders === null) return
    if (e.behavior_id === null) {
      throw ERRORS.siteAdminRequired("Only site administrators manage the site listener's endpoint")
    }
    if (e.path !== null && folders.some((f) => isWithin(e.path!, f))) return
    throw ERRORS.folderAdminPermissionRequired(
      `You do not administer a folder containing ${e.path === '' ? 'the root folder' : e.path}`,
    )
  }

  /** null: every endpoint (a site admin); else the folders the caller administers. */
  private async scopeOf(p: Principal): Promise<string[] | null> {
    if (isSiteAdmin(p)) return null
    const folders = await this.permissions.adminFolders(p.siteId, p.user!.id)
    if (folders.length === 0) {
      throw ERRORS.folderAdminPermissionRequired(
        'Only site administrators and folder administrators can manage webhook endpoints',
      )
    }
    return folders
  }

  private async render(r: Row): Promise<EndpointJson> {
    const now = this.now()
    const [queued, hour, day] = await Promise.all([
      queuedOf(this.db, r),
      this.window(r, now - HOUR),
      this.window(r, now - DAY),
    ])
    return {
      id: r.id,
      behavior_id: r.behavior_id,
      path: r.behavior_id === null ? null : r.path,
      url: r.url,
      state: r.state,
      consecutive_failures: r.consecutive_failures,
      failing_since: formatDateTime(r.failing_since),
      last_success_at: formatDateTime(r.last_success_at),
      last_failure_at: formatDateTime(r.last_failure_at),
      last_failure_reason: r.last_failure_reason,
      disabled_at: formatDateTime(r.disabled_at),
      disabled_reason: r.disabled_reason,
      rate_limit: r.rate_limit,
      concurrency: r.concurrency,
      file_aware: r.file_aware === 1,
      queued_count: queued.count,
      oldest_queued_at: formatDateTime(queued.oldest),
      oldest_queued_age_seconds:
        queued.oldest === null ? null : Math.max(0, Math.floor((now - queued.oldest) / 1000)),
      hour_attempts: hour.attempts,
      hour_success_rate: hour.success_rate,
      hour_latency_p50_ms: hour.latency_p50_ms,
      hour_latency_p99_ms: hour.latency_p99_ms,
      day_attempts: day.attempts,
      day_success_rate: day.success_rate,
      day_latency_p50_ms: day.latency_p50_ms,
      day_latency_p99_ms: day.latency_p99_ms,
    }
  }

  /**
   * Success rate and latency percentiles of the endpoint's attempts since `from`. Read along the
   * log's index by site, behavior and id, from the first id of the window: only this endpoint's
   * attempts, not every attempt of the site in that time (100 endpoints' answers each read the
   * site's whole last day before). The first id is that of the first attempt sent WINDOW_SLACK_MS
   * before `from`: an attempt is written after its request ends, so one sent in the window may
   * have a lower id than one sent just before it.
   */
  private async window(e: Row, from: number): Promise<Window> {
    const first = await this.db
      .selectFrom('webhook_attempts')
      .select('id')
      .where('site_id', '=', e.site_id)
      .where('created_at', '>=', from - WINDOW_SLACK_MS)
      .orderBy('created_at')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst()
    if (first === undefined)
      return { attempts: 0, success_rate: null, latency_p50_ms: null, latency_p99_ms: null }
    let q = this.db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_notifications as n', 'n.id', 'a.notification_id')
      .select(['a.success', 'a.duration_ms'])
      .where('a.site_id', '=', e.site_id)
      .where('a.id', '>=', Number(first.id))
      .where('a.created_at', '>=', from)
      .where(ofEndpoint(e, 'n'))
    q =
      e.behavior_id === null
        ? q.where('a.behavior_id', 'is', null).where('a.request_url', '=', e.url)
        : q.where('a.behavior_id', '=', e.behavior_id)
    const rows = await q.orderBy('a.id', 'desc').limit(WINDOW_ROWS).execute()
    if (rows.length === 0)
      return { attempts: 0, success_rate: null, latency_p50_ms: null, latency_p99_ms: null }
    const ok = rows.filter((r) => Number(r.success) === 1).length
    const ms = rows.map((r) => Number(r.duration_ms)).sort((a, b) => a - b)
    const at = (q: number) => ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]!
    return {
      attempts: rows.length,
      success_rate: Math.round((ok / rows.length) * 10_000) / 10_000,
      latency_p50_ms: at(0.5),
      latency_p99_ms: at(0.99),
    }
  }
}

/** Endpoints of webhook behaviors on or inside the folders (the site listener is none of them). */
function withinFolders(folders: string[]) {
  const esc = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)
  return sql<SqlBool>`e.behavior_id is not null and (${sql.join(
    folders.map((f) => {
      const lower = f.toLowerCase()
      if (lower === '') return sql`1 = 1`
      return sql`(b.path_lower = ${lower} or b.path_lower like ${`${esc(lower)}/%`} escape '\\')`
    }),
    sql` or `,
  )})`
}
