import { Type } from '@sinclair/typebox'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, IdParams } from '../schemas.js'

export const WebhookTestResultSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Id of the log record of this request' }),
    success: Type.Boolean({ description: 'true when the listener answered 200 or 204' }),
    status: Type.Integer({ description: 'HTTP status, or a curl-style code for a network failure' }),
    message: Type.String(),
    request_url: Type.String(),
    response_size: Type.Integer(),
    response_body: Type.String({ description: "The listener's response body (first 64 KiB)" }),
    duration_ms: Type.Integer(),
  },
  { $id: 'WebhookTestResult', title: 'WebhookTestResult' },
)

/** Sending webhooks on request: a test to the saved listener, and the retry of a failed request. */
export function webhookDeliveryRoutes(container: HttpContext): Routes {
  const svc = container.services.webhooks
  return async (app) => {
    app.post(
      '/webhook_settings/test',
      {
        config: { xml: 'webhook-test-result' },
        schema: {
          summary: 'Send a test notification to the saved listener and report its answer',
          tags: ['webhooks'],
          response: { 200: WebhookTestResultSchema, ...errorResponses },
        },
      },
      async (request) => svc.sendTest(request.principal),
    )

    app.post(
      '/action_webhook_failures/:id/retry',
      {
        schema: {
          summary: 'Send a failed webhook request again now, to the listener configured now',
          tags: ['action_webhook_failures'],
          params: IdParams,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.retryFailure(request.principal, request.params.id)
        return reply.code(204).send()
      },
    )
  }
}
