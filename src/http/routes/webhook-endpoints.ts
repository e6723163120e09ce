import { Type } from '@sinclair/typebox'
import { ATTEMPT_LIST, ENDPOINT_LIST } from '../../modules/webhooks/webhook-endpoint-service.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import {
  DateTime,
  DateTimeText,
  errorResponses,
  IdParams,
  listQuery,
  Nullable,
  StringEnum,
} from '../schemas.js'

const Rate = (description: string) => Nullable(Type.Number({ description }))
const Ms = Nullable(Type.Integer())

export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.Integer(),
    behavior_id: Nullable(Type.Integer({ description: 'The webhook behavior; null for the site listener' })),
    path: Nullable(Type.String({ description: "The behavior's folder; null for the site listener" })),
    url: Type.String(),
    state: Type.String({
      description:
        'enabled, failing (its last attempt failed), disabled (by delivery: failing too long, or 410 Gone) or paused (by an operator)',
    }),
    consecutive_failures: Type.Integer(),
    failing_since: DateTime('When the current run of failures began'),
    last_success_at: DateTime(),
    last_failure_at: DateTime(),
    last_failure_reason: Nullable(Type.String()),
    disabled_at: DateTime(),
    disabled_reason: Nullable(Type.String()),
    rate_limit: Nullable(Type.Integer({ description: 'Requests per second at most; null: no limit' })),
    concurrency: Nullable(Type.Integer({ description: 'Requests in flight at once at most; null: no cap' })),
    file_aware: Type.Boolean({ description: 'Bodies carry the file fields and a download link' }),
    queued_count: Type.Integer({ description: 'Notifications waiting (pending or held)' }),
    oldest_queued_at: DateTime(),
    oldest_queued_age_seconds: Nullable(Type.Integer()),
    hour_attempts: Type.Integer({ description: 'Attempts over the last hour' }),
    hour_success_rate: Rate('Share of them that succeeded (0 to 1)'),
    hour_latency_p50_ms: Ms,
    hour_latency_p99_ms: Ms,
    day_attempts: Type.Integer({ description: 'Attempts over the last day' }),
    day_success_rate: Rate('Share of them that succeeded (0 to 1)'),
    day_latency_p50_ms: Ms,
    day_latency_p99_ms: Ms,
  },
  { $id: 'WebhookEndpoint', title: 'WebhookEndpoint' },
)

const UpdateBody = Type.Object(
  {
    state: Type.Optional(
      Type.Unsafe<string>({
        type: 'string',
        enum: ['enabled', 'paused'],
        description: 'enabled (sends what was kept, unless discard_queued) or paused (keeps what comes)',
        ...checked('webhook-choice'),
      }),
    ),
    rate_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000 }))),
    concurrency: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1024 }))),
    file_aware: Type.Optional(Type.Boolean()),
    discard_queued: Type.Optional(
      Type.Boolean({
        description: 'Discards the notifications kept while paused or disabled instead of sending them',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookEndpointUpdate' },
)

const RecoverBody = Type.Object(
  {
    since: Type.Optional(DateTimeText('Notifications made at or after this time')),
    until: Type.Optional(DateTimeText('Notifications made before this time')),
    only_failed: Type.Optional(Type.Boolean({ description: 'Only those whose retries ran out' })),
    dry_run: Type.Optional(Type.Boolean({ description: 'Only count them' })),
  },
  { additionalProperties: false, title: 'WebhookEndpointRecover' },
)

export const WebhookRecoverySchema = Type.Object(
  {
    endpoint_id: Type.Integer(),
    dry_run: Type.Boolean(),
    count: Type.Integer({ description: 'Notifications queued again (or that would be, on a dry run)' }),
  },
  { $id: 'WebhookRecovery', title: 'WebhookRecovery' },
)

export const WebhookAttemptSchema = Type.Object(
  {
    id: Type.Integer(),
    endpoint_id: Type.Integer(),
    notification_id: Type.Integer(),
    event_id: Type.String({ description: 'The webhook-id header: the same on every attempt of the event' }),
    attempt: Type.Integer(),
    status: StringEnum(['success', 'failure'] as const),
    response_code: Nullable(Type.Integer({ description: 'HTTP status; null for a network failure' })),
    response_body: Type.String({ description: 'First 64 KiB' }),
    latency_ms: Type.Integer(),
    error: Nullable(Type.String()),
    next_attempt_at: DateTime(
      'When the next attempt is due, for the latest attempt of a pending notification',
    ),
    created_at: Type.String({ format: 'date-time' }),
    path: Type.String(),
    operation: Type.String(),
  },
  { $id: 'WebhookAttempt', title: 'WebhookAttempt' },
)

const tags = ['webhook_endpoints']

/** Webhook endpoints: health, pause and limits, recovery, and their attempts. */
export function webhookEndpointRoutes(c: HttpContext): Routes {
  const svc = c.services.webhookEndpoints
  return async (app) => {
    app.get(
      '/webhook_endpoints',
      {
        config: { xml: ['webhook-endpoints', 'webhook-endpoint'] },
        schema: {
          summary:
            'List webhook endpoints (the site listener and each URL of each webhook behavior) with their health',
          tags,
          querystring: listQuery({}, ENDPOINT_LIST),
          response: { 200: Type.Array(WebhookEndpointSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )

    app.get(
      '/webhook_endpoints/:id',
      {
        config: { xml: 'webhook-endpoint' },
        schema: {
          summary: 'Show a webhook endpoint with its health',
          tags,
          params: IdParams,
          response: { 200: WebhookEndpointSchema, ...errorResponses },
        },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.patch(
      '/webhook_endpoints/:id',
      {
        config: { xml: 'webhook-endpoint' },
        schema: {
          summary: 'Pause or enable a webhook endpoint, or change its limits and file-aware option',
          tags,
          params: IdParams,
          body: UpdateBody,
          response: { 200: WebhookEndpointSchema, ...errorResponses },
        },
      },
      async (request) => svc.update(request.principal, request.params.id, request.body),
    )

    app.post(
      '/webhook_endpoints/:id/recover',
      {
        config: { xml: 'webhook-recovery' },
        schema: {
          summary: "Send an endpoint's past notifications again, in order, with their event ids",
          tags,
          params: IdParams,
          body: RecoverBody,
          response: { 200: WebhookRecoverySchema, ...errorResponses },
        },
      },
      async (request) => svc.recover(request.principal, request.params.id, request.body ?? {}),
    )

    app.get(
      '/webhook_endpoints/:id/attempts',
      {
        config: { xml: ['webhook-attempts', 'webhook-attempt'] },
        schema: {
          summary: 'List the attempts of a webhook endpoint',
          tags,
          params: IdParams,
          querystring: listQuery({}, ATTEMPT_LIST),
          response: { 200: Type.Array(WebhookAttemptSchema), ...errorResponses },
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.attempts(request.principal, request.params.id, request.query)),
    )

    app.post(
      '/webhook_attempts/:id/resend',
      {
        schema: {
          summary: "Send an attempt's notification again now, with its event id",
          tags: ['webhook_attempts'],
          params: IdParams,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.resend(request.principal, request.params.id)
        return reply.code(204).send()
      },
    )
  }
}
