import { Type } from '@sinclair/typebox'
import type { Container } from '../../container.js'
import type { Routes } from '../route-types.js'
import { ErrorSchema, IdParams } from '../schemas.js'

const LinkQuery = Type.Object(
  {
    expires: Type.Optional(Type.String({ maxLength: 20, description: 'Epoch seconds' })),
    signature: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
)

/** The CSV behind an export's `results_url`: signed and expiring, no credentials. */
export function exportFileRoutes(c: Container): Routes {
  const svc = c.services.exports
  return async (app) => {
    app.get(
      '/export_files/:id',
      {
        config: { auth: false },
        schema: {
          summary: 'All results of a ready export as CSV: the link in its results_url (no credentials)',
          tags: ['action_notification_exports', 'history_exports'],
          security: [],
          produces: ['text/csv', 'application/json', 'application/xml'],
          params: IdParams,
          querystring: LinkQuery,
          response: { 200: Type.String({ format: 'binary' }), 400: ErrorSchema, 401: ErrorSchema },
        },
      },
      async (request, reply) => {
        const file = await svc.forLink(request.params.id, request.query)
        return reply
          .type('text/csv; charset=utf-8')
          .header('Content-Disposition', `attachment; filename="${file.fileName}"`)
          .header('Content-Length', String(file.bytes))
          .header('Cache-Control', 'private, no-store')
          .send(file.stream)
      },
    )
  }
}
