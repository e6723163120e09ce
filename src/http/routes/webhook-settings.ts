import { Type } from '@sinclair/typebox'
import { MAX_URL_LENGTH, URL_PATTERN, WEBHOOK_OPERATIONS } from '../../modules/webhooks/webhook-settings.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Nullable } from '../schemas.js'

const OPERATIONS = WEBHOOK_OPERATIONS.join(', ')

export const WebhookSettingsSchema = Type.Object(
  {
    url: Nullable(Type.String({ description: 'Listener URL (http or https); null when none' })),
    triggers: Type.Array(Type.String(), { description: `Operations that notify: ${OPERATIONS}` }),
    enabled: Type.Boolean({ description: 'Whether notifications are sent' }),
    verification_token: Type.String({
      description: 'X-Service-Signature = md5(verification_token + body); never changes',
    }),
    signing_secret: Type.String({
      description: 'Standard Webhooks key (whsec_…) of the webhook-signature header; never changes',
    }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'WebhookSettings', title: 'WebhookSettings' },
)

const Echo = Type.Optional(
  Type.Unknown({ description: 'Read-only: accepted only when equal to the current value' }),
)

// URL rules (length included) are the service's: they answer 422 with a message on `url`.
const UpdateBody = Type.Object(
  {
    url: Type.Optional(
      Nullable(
        Type.String({
          description: 'Absolute http(s) URL, at most 2048 characters; empty or null clears it',
          // The shape the service takes: http or https, a host, no user name or password, no
          // spaces or control characters.
          pattern: URL_PATTERN,
          maxLength: MAX_URL_LENGTH,
          ...checked('url'),
        }),
      ),
    ),
    triggers: Type.Optional(
      Type.Array(Type.String({ maxLength: 64, enum: [...WEBHOOK_OPERATIONS], ...checked('trigger') }), {
        maxItems: 64,
        description: `Operation names (${OPERATIONS}); in XML <triggers type="array"><trigger>…</trigger></triggers>`,
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'true needs a url' })),
    verification_token: Echo,
    signing_secret: Echo,
    updated_at: Echo,
  },
  { additionalProperties: false },
)

const tags = ['webhook_settings']
const one = { 200: WebhookSettingsSchema, ...errorResponses }

export function webhookSettingsRoutes(c: HttpContext): Routes {
  const svc = c.services.webhookSettings
  return async (app) => {
    app.get(
      '/webhook_settings',
      {
        config: { xml: 'webhook-settings' },
        schema: { summary: 'Show the webhook settings (site admins)', tags, response: one },
      },
      async (request) => svc.get(request.principal),
    )

    app.patch(
      '/webhook_settings',
      {
        config: { xml: 'webhook-settings' },
        schema: {
          summary: 'Change the webhook settings (site admins); they apply at once',
          tags,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => svc.update(request.principal, request.body),
    )
  }
}
