import type { Kysely } from 'kysely'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { listRequest, toFeedPage } from '../../db/list-cursor.js'
import { applyListQuery } from '../../db/list-sql.js'
import type { Database } from '../../db/schema.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { SiteNames } from '../../webhooks/site-names.js'

/**
 * The event feed (docs/decisions.md, "The event feed"): the notifications of the outbox, the same
 * ones the endpoints are sent, for a consumer that pulls instead of being pushed and resumes from
 * its cursor; and the delivery attempts of each, from the delivery log.
 */

export const EVENT_LIST: ListSpec = {
  name: 'events',
  idColumn: 'webhook_notifications.id',
  sort: {},
  filter: {
    path: { column: 'webhook_notifications.path', type: 'string' },
    operation: { column: 'webhook_notifications.operation', type: 'string' },
    created_at: { column: 'webhook_notifications.created_at', type: 'datetime' },
  },
}

export const EVENT_ATTEMPT_LIST: ListSpec = {
  name: 'event-attempts',
  idColumn: 'webhook_attempts.id',
  sort: {},
  filter: {},
}

export interface EventJson {
  id: number
  webhook_id: string
  sequence: number | null
  behavior_id: number | null
  url: string | null
  accountname: string
  username: string
  operation: string
  protocol: string
  path: string
  sourcepath: string
  state: string
  attempts: number
  next_attempt_at: string | null
  created_at: string
}

export interface EventAttemptJson {
  id: number
  event_id: number
  attempt: number
  created_at: string
  success: boolean
  status: number
  message: string
  request_method: string
  request_url: string
  request_headers: string
  request_body: string
  response_size: number
  response_body: string
  duration_ms: number
  behavior_id: number | null
}

const EVENT_COLUMNS = [
  'id',
  'message_id',
  'sequence',
  'behavior_id',
  'url',
  'username',
  'operation',
  'protocol',
  'path',
  'sourcepath',
  'state',
  'attempts',
  'next_attempt_at',
  'created_at',
] as const

const ATTEMPT_COLUMNS = [
  'id',
  'notification_id',
  'attempt',
  'created_at',
  'success',
  'status',
  'message',
  'request_method',
  'request_url',
  'request_headers',
  'request_body',
  'response_size',
  'response_body',
  'duration_ms',
  'behavior_id',
] as const

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

export class EventFeedService {
  private readonly names: SiteNames

  constructor(
    private readonly db: Kysely<Database>,
    private readonly secrets: SiteSecrets,
  ) {
    this.names = new SiteNames(db)
  }

  /**
   * `GET /events`: the site's events, oldest first, from the outbox (tests are no events). With
   * `behavior_id`, one endpoint's: a webhook behavior's, or with 0 the site's listener's.
   */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<EventJson>> {
    requireSiteAdmin(p)
    const behaviorId = query['behavior_id'] as number | undefined
    const secret = await this.secrets.signingSecret(p.siteId)
    const list = listRequest(EVENT_LIST, query, secret, { behavior_id: behaviorId ?? null })
    let q = this.db
      .selectFrom('webhook_notifications')
      .select(EVENT_COLUMNS.map((c) => `webhook_notifications.${c}` as const))
      .where('site_id', '=', p.siteId)
      .where('action_id', 'is not', null)
    if (behaviorId === 0) q = q.where('behavior_id', 'is', null)
    else if (behaviorId !== undefined) q = q.where('behavior_id', '=', behaviorId)
    const rows = await applyListQuery(q, EVENT_LIST, list.query).execute()
    const page = toFeedPage(
      rows,
      EVENT_LIST,
      list.query,
      secret,
      (query['cursor'] as string | undefined) || null,
    )
    const accountname = this.names.known(p.siteId) ?? (await this.names.read(p.siteId))
    return mapPage(page, (r) => ({
      id: Number(r.id),
      webhook_id: r.message_id,
      sequence: num(r.sequence),
      behavior_id: num(r.behavior_id),
      url: r.url,
      accountname,
      username: r.username,
      operation: r.operation,
      protocol: r.protocol,
      path: r.path,
      sourcepath: r.sourcepath,
      state: r.state,
      attempts: Number(r.attempts),
      next_attempt_at: formatDateTime(num(r.next_attempt_at)),
      created_at: formatDateTime(Number(r.created_at))!,
    }))
  }

  /** `GET /events/{id}/attempts`: an event's delivery attempts, oldest first. */
  async attempts(p: Principal, id: number, query: Record<string, unknown>): Promise<Page<EventAttemptJson>> {
    requireSiteAdmin(p)
    const event = await this.db
      .selectFrom('webhook_notifications')
      .select('id')
      .where('id', '=', id)
      .where('site_id', '=', p.siteId)
      .where('action_id', 'is not', null)
      .executeTakeFirst()
    if (!event) throw ERRORS.notFound(`No event has id ${id}`)
    const secret = await this.secrets.signingSecret(p.siteId)
    const list = listRequest(EVENT_ATTEMPT_LIST, query, secret, { event_id: id })
    const q = this.db
      .selectFrom('webhook_attempts')
      .select(ATTEMPT_COLUMNS.map((c) => `webhook_attempts.${c}` as const))
      .where('notification_id', '=', id)
      .where('site_id', '=', p.siteId)
    const rows = await applyListQuery(q, EVENT_ATTEMPT_LIST, list.query).execute()
    const page = toFeedPage(
      rows,
      EVENT_ATTEMPT_LIST,
      list.query,
      secret,
      (query['cursor'] as string | undefined) || null,
    )
    return mapPage(page, (r) => ({
      id: Number(r.id),
      event_id: Number(r.notification_id),
      attempt: Number(r.attempt),
      created_at: formatDateTime(Number(r.created_at))!,
      success: Number(r.success) === 1,
      status: Number(r.status),
      message: r.message,
      request_method: r.request_method,
      request_url: r.request_url,
      request_headers: r.request_headers,
      request_body: r.request_body,
      response_size: Number(r.response_size),
      response_body: r.response_body,
      duration_ms: Number(r.duration_ms),
      behavior_id: num(r.behavior_id),
    }))
  }
}
