import { Type } from '@sinclair/typebox'
import { MAX_ZIP_PATHS } from '../../modules/files/zip-download-service.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses } from '../schemas.js'
import { sendZip } from '../zip-stream.js'

const ZipBody = Type.Object(
  {
    paths: Type.Array(Type.String({ maxLength: 5000 }), {
      minItems: 1,
      maxItems: MAX_ZIP_PATHS,
      description: `Files and folders (folders with everything inside them), at most ${MAX_ZIP_PATHS}; "" for the root folder`,
    }),
  },
  { additionalProperties: false },
)

const LinkParams = Type.Object({
  token: Type.String({ maxLength: 65536, description: 'Signed, expiring token' }),
  name: Type.String({ maxLength: 5000, description: 'A name for the browser; not checked' }),
})

/**
 * A user's own files and folders as one ZIP (Wharf's own; the spec has no such route):
 * `POST /file_actions/zip_download` gives a link, the link streams the ZIP.
 */
export function zipDownloadRoutes(c: HttpContext): Routes {
  const svc = c.services.zipDownloads
  return async (app) => {
    app.post(
      '/file_actions/zip_download',
      {
        config: { access: 'files', xml: 'zip', readOnlySession: 'reads' },
        schema: {
          summary: 'A download_uri for a ZIP of files and folders, for this address only',
          description:
            'Every path must exist and be readable. The link works as long as a download_uri, only from the address that asked, and reads the permissions again when used: what the user may not read inside a folder is left out. Each file read is recorded as a download.',
          tags: ['files'],
          body: ZipBody,
          response: { 200: Type.Object({ download_uri: Type.String() }), ...errorResponses },
        },
      },
      async (request) => svc.link(request.principal, request.body.paths),
    )

    app.get(
      '/zip_downloads/:token/:name',
      {
        config: { auth: false },
        schema: {
          summary: 'A ZIP of files and folders, streamed (ZIP64 when large)',
          tags: ['files'],
          security: [],
          params: LinkParams,
          produces: ['application/zip', 'application/json', 'application/xml'],
          response: { 200: Type.String({ format: 'binary' }), ...errorResponses },
        },
      },
      async (request, reply) => {
        const plan = await svc.plan(request.params.token, request.ip)
        return sendZip(request, reply, {
          name: plan.name,
          directories: plan.directories,
          now: c.now(),
          entries: plan.entries.map((entry) => ({
            row: entry.row,
            name: entry.name,
            size: entry.row.size,
            mtime: entry.row.mtime,
            open: () => svc.open(entry.row),
          })),
          record: (reached) =>
            svc.record(
              plan,
              reached.map((r) => r.row),
              request.ip,
            ),
        })
      },
    )
  }
}
