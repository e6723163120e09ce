import { Type } from '@sinclair/typebox'
import { ACTION_LIST, DOWNLOAD_LIST, REGISTRATION_LIST } from '../../modules/bundles/bundle-visit-model.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Id, listQuery, Nullable, UserIdParam } from '../schemas.js'
import { BundleRegistrationSchema } from './bundles-public.js'

const BundleDownloadSchema = Type.Object(
  {
    bundle_registration: BundleRegistrationSchema,
    download_method: Type.String({ description: 'file, or full_zip for a file downloaded in a ZIP' }),
    path: Type.String({ description: 'The file, relative to the share' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'BundleDownload' },
)

const BundleActionSchema = Type.Object(
  {
    action: Type.String({ description: 'create (an upload of a new file) or update (over an existing one)' }),
    bundle_registration: BundleRegistrationSchema,
    created_at: Type.String({ format: 'date-time' }),
    destination: Nullable(Type.String()),
    path: Type.String({ description: 'Relative to the share' }),
    source: Nullable(Type.String()),
    bundle_registration_id: Type.Integer(),
    bundle_registration_name: Nullable(Type.String()),
    bundle_registration_email: Nullable(Type.String()),
    bundle_registration_ip: Nullable(Type.String()),
  },
  { title: 'BundleAction' },
)

const user_id = Type.Optional(UserIdParam)
const tags = ['bundles']

/** What share links' recipients did, for the links' owners (site admins: every link's). */
export function bundleRecordRoutes(c: HttpContext): Routes {
  const svc = c.services.bundleRecords
  return async (app) => {
    app.get(
      '/bundle_registrations',
      {
        config: { access: 'files', xml: ['bundle-registrations', 'bundle-registration'] },
        schema: {
          summary: 'List the visits of your share links (codes are not shown)',
          tags,
          querystring: listQuery(
            { user_id, bundle_id: Type.Optional(Id('Only this share link')) },
            REGISTRATION_LIST,
          ),
          response: { 200: Type.Array(BundleRegistrationSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.registrations(request.principal, request.query)),
    )
    app.get(
      '/bundle_downloads',
      {
        config: { access: 'files', xml: ['bundle-downloads', 'bundle-download'] },
        schema: {
          summary: 'List the files downloaded through your share links',
          tags,
          querystring: listQuery(
            {
              user_id,
              bundle_id: Type.Optional(Id('Only this share link')),
              bundle_registration_id: Type.Optional(Id('Only this visit')),
            },
            DOWNLOAD_LIST,
          ),
          response: { 200: Type.Array(BundleDownloadSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.downloads(request.principal, request.query)),
    )
    app.get(
      '/bundle_actions',
      {
        config: { access: 'files', xml: ['bundle-actions', 'bundle-action'] },
        schema: {
          summary: 'List what visitors did in your share links (uploads)',
          tags,
          querystring: listQuery({ user_id }, ACTION_LIST),
          response: { 200: Type.Array(BundleActionSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.actions(request.principal, request.query)),
    )
  }
}
