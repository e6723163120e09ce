import { Type } from '@sinclair/typebox'
import { EVENT_ATTEMPT_LIST, EVENT_LIST } from '../../modules/webhooks/event-feed.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, IdParams, listQuery, Nullable } from '../schemas.js'

const EventSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Event id: one notification of one Action to one endpoint' }),
    webhook_id: Type.String({ description: 'The webhook-id header its requests carry, on every attempt' }),
    sequence: Nullable(
      Type.Integer({ description: 'Webhook-Sequence: its number among its path’s events to its endpoint' }),
    ),
    behavior_id: Nullable(
      Type.Integer({ description: "The webhook behavior it is for; null for the site's listener" }),
    ),
    url: Nullable(
      Type.String({ description: "The behavior's URL it goes to; null for the site's listener" }),
    ),
    accountname: Type.String(),
    username: Type.String(),
    operation: Type.String({ description: 'Upload, Download, Delete, Create Folder, Rename, Move or Copy' }),
    protocol: Type.String(),
    path: Type.String(),
    sourcepath: Type.String(),
    state: Type.String({ description: 'pending, delivered, failed (attempts used up) or dropped' }),
    attempts: Type.Integer({ description: 'Attempts made so far' }),
    next_attempt_at: Nullable(
      Type.String({ format: 'date-time', description: 'When pending: the next attempt' }),
    ),
    created_at: Type.String({ format: 'date-time', description: 'When its Action happened' }),
  },
  { $id: 'Event', title: 'Event' },
)

const EventAttemptSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Id of the log record (what the retry endpoint takes when it failed)' }),
    event_id: Type.Integer(),
    attempt: Type.Integer(),
    created_at: Type.String({ format: 'date-time', description: 'When the request was sent' }),
    success: Type.Boolean({ description: 'true when the endpoint answered 200 or 204' }),
    status: Type.Integer({ description: 'HTTP status, or a curl-style code for a network failure' }),
    message: Type.String(),
    request_method: Type.String(),
    request_url: Type.String(),
    request_headers: Type.String({ description: 'JSON of the headers sent' }),
    request_body: Type.String({
      description: 'The payload sent (for GET, the query string added to the URL)',
    }),
    response_size: Type.Integer(),
    response_body: Type.String({ description: 'The first 64 KiB of the answer' }),
    duration_ms: Type.Integer(),
    behavior_id: Nullable(Type.Integer()),
  },
  { $id: 'EventAttempt', title: 'EventAttempt' },
)

const tags = ['events']

/** The event feed and each event's attempts (site admins). */
export function eventRoutes(c: HttpContext): Routes {
  const svc = c.services.events
  return async (app) => {
    app.get(
      '/events',
      {
        config: { xml: ['events', 'event'] },
        schema: {
          summary:
            'List the webhook events the endpoints are sent, oldest first; the next cursor is given at the end too, to resume from',
          tags,
          querystring: listQuery(
            {
              behavior_id: Type.Optional(
                Type.Integer({
                  minimum: 0,
                  description: "Only this webhook behavior's events; 0: only the site listener's",
                }),
              ),
            },
            EVENT_LIST,
          ),
          response: { 200: Type.Array(EventSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )
    app.get(
      '/events/:id/attempts',
      {
        config: { xml: ['event-attempts', 'event-attempt'] },
        schema: {
          summary: 'List the delivery attempts of an event, oldest first',
          tags,
          params: IdParams,
          querystring: listQuery({}, EVENT_ATTEMPT_LIST),
          response: { 200: Type.Array(EventAttemptSchema), ...errorResponses },
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.attempts(request.principal, request.params.id, request.query)),
    )
  }
}
