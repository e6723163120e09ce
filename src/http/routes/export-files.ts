import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { signedFileSchema } from '../schemas.js'

/** The CSV behind an export's `results_url`: signed and expiring, no credentials. */
export function exportFileRoutes(c: HttpContext): Routes {
  const svc = c.services.exports
  return async (app) => {
    app.get(
      '/export_files/:id',
      {
        config: { auth: false },
        schema: {
          summary: 'All results of a ready export as CSV: the link in its results_url (no credentials)',
          tags: ['action_notification_exports', 'history_exports'],
          ...signedFileSchema('text/csv'),
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
