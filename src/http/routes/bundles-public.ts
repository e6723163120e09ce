import { type TSchema, Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { ERRORS } from '../../api/error-factories.js'
import { sendFileBytes } from '../file-bytes.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { DateTime, errorResponses, Nullable } from '../schemas.js'
import { sendZip } from '../zip-stream.js'
import { FileSchema, FileUploadPartSchema } from './file-schemas.js'
import { asFile, UploadBody, uploadOptions } from './files.js'
import { FolderListQuery } from './folders.js'

/** The header a visitor's requests carry: their registration's code. */
export const REGISTRATION_HEADER = 'x-bundle-registration-code'

const hostedOnly = (schema: TSchema) => ({ ...schema, description: 'Not used by Wharf: always null' })

const CodeParams = Type.Object({
  code: Type.String({ maxLength: 100, description: 'The share link’s code' }),
})
const PathParams = Type.Object({
  code: Type.String({ maxLength: 100, description: 'The share link’s code' }),
  '*': Type.String({
    description: 'A path relative to the share: a shared file or folder’s name, then inside it',
  }),
})
const RegistrationHeader = Type.Object({
  [REGISTRATION_HEADER]: Type.Optional(
    Type.String({ maxLength: 200, description: 'The code of the visitor’s registration' }),
  ),
})

export const PublicBundleSchema = Type.Object(
  {
    code: Type.String(),
    description: Nullable(Type.String()),
    note: Nullable(Type.String()),
    permissions: Type.String({ description: 'read, write, read_write or preview_only' }),
    preview_only: Type.Boolean(),
    password_protected: Type.Boolean(),
    require_registration: Type.Boolean(),
    skip_name: Type.Boolean(),
    skip_email: Type.Boolean(),
    skip_company: Type.Boolean(),
    expires_at: DateTime('When the link stops working; null for never'),
    start_access_on_date: DateTime('When the link started working; null for at once'),
    can_upload: Type.Boolean({ description: 'The link takes uploads (write, read_write)' }),
    dont_allow_folders_in_uploads: Type.Boolean(),
    paths: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'The shared files and folders, by name: for a link without password or registration, or with one of its registration codes',
      }),
    ),
  },
  { title: 'PublicBundle' },
)

export const BundleRegistrationSchema = Type.Object(
  {
    code: Nullable(Type.String({ description: 'The registration code (shown once, to the visitor)' })),
    name: Nullable(Type.String()),
    company: Nullable(Type.String()),
    email: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    inbox_code: hostedOnly(Nullable(Type.String())),
    clickwrap_body: hostedOnly(Nullable(Type.String())),
    form_field_set_id: hostedOnly(Nullable(Type.Integer())),
    form_field_data: hostedOnly(Nullable(Type.Object({}, { additionalProperties: true }))),
    bundle_code: Type.String(),
    bundle_id: Type.Integer(),
    bundle_recipient_id: hostedOnly(Nullable(Type.Integer())),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'BundleRegistration', title: 'BundleRegistration' },
)

const RegistrationBody = Type.Object(
  {
    password: Type.Optional(
      Type.String({ maxLength: 1024, description: 'The link’s password, if it has one' }),
    ),
    name: Type.Optional(Type.String({ maxLength: 255 })),
    email: Type.Optional(Type.String({ maxLength: 255 })),
    company: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
)

const ZipBody = Type.Object(
  {
    paths: Type.Array(Type.String({ maxLength: 5000 }), {
      maxItems: 100,
      description: 'Share-relative files and folders (folders recursively); [""] for the whole share',
    }),
  },
  { additionalProperties: false },
)

const LinkParams = Type.Object({
  token: Type.String({ maxLength: 65536, description: 'Signed, expiring token' }),
  name: Type.String({ maxLength: 5000, description: 'A name for the browser; not checked' }),
})

/** A folder's listing as `GET /folders` takes it, but inside the share only: no search_all. */
const ShareListQuery = Type.Omit(FolderListQuery, ['search_all'], {
  additionalProperties: FolderListQuery.additionalProperties,
  patternProperties: FolderListQuery.patternProperties,
})

const tags = ['public bundles']
const open = { security: [] as never[] }

function regCode(request: FastifyRequest): string | undefined {
  const v = request.headers[REGISTRATION_HEADER]
  return typeof v === 'string' ? v : undefined
}

/**
 * Share links, the recipients' side: no user credentials; a visitor registers and sends the
 * registration's code in `X-Bundle-Registration-Code`.
 */
export function publicBundleRoutes(c: HttpContext): Routes {
  const svc = c.services.bundleVisitors
  const downloads = c.services.downloads
  const siteId = () => c.site.id
  return async (app) => {
    const visit = (request: FastifyRequest) =>
      svc.visit(siteId(), (request.params as { code: string }).code, regCode(request), request.ip)

    app.get(
      '/public/bundles/:code',
      {
        config: { auth: false, xml: 'bundle' },
        schema: {
          summary: 'What a visitor sees of a share link before unlocking it',
          tags,
          ...open,
          headers: RegistrationHeader,
          params: CodeParams,
          response: { 200: PublicBundleSchema, ...errorResponses },
        },
      },
      async (request) => svc.show(siteId(), request.params.code, regCode(request)),
    )

    app.post(
      '/public/bundles/:code/registrations',
      {
        config: { auth: false, xml: 'bundle-registration' },
        schema: {
          summary: 'Start a visit: password and registration fields in, a registration code out',
          tags,
          ...open,
          params: CodeParams,
          body: RegistrationBody,
          response: { 201: BundleRegistrationSchema, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await svc.register(siteId(), request.params.code, request.body, request.ip)),
    )

    const listSchema = {
      summary: 'List a shared folder (no path: the shared files and folders)',
      tags,
      ...open,
      headers: RegistrationHeader,
      querystring: ShareListQuery,
      response: { 200: Type.Array(FileSchema), ...errorResponses },
    }
    app.get(
      '/public/bundles/:code/folders',
      { config: { auth: false, xml: ['files', 'file'] }, schema: { ...listSchema, params: CodeParams } },
      async (request, reply) => sendPage(reply, await svc.list(await visit(request), '', request.query)),
    )
    app.get(
      '/public/bundles/:code/folders/*',
      { config: { auth: false, xml: ['files', 'file'] }, schema: { ...listSchema, params: PathParams } },
      async (request, reply) =>
        sendPage(reply, await svc.list(await visit(request), request.params['*'], request.query)),
    )

    app.get(
      '/public/bundles/:code/files/*',
      {
        config: { auth: false, xml: 'file' },
        schema: {
          summary: 'A shared file with a download_uri',
          tags,
          ...open,
          headers: RegistrationHeader,
          params: PathParams,
          response: { 200: FileSchema, ...errorResponses },
        },
      },
      async (request) => svc.file(await visit(request), request.params['*']),
    )

    app.post(
      '/public/bundles/:code/files/*',
      {
        config: { auth: false, xml: 'file-upload-part' },
        schema: {
          summary: 'Upload into a share that takes uploads: action=put, the parts, action=end',
          tags,
          ...open,
          headers: RegistrationHeader,
          params: PathParams,
          body: UploadBody,
          response: {
            200: FileUploadPartSchema,
            201: Type.Union([FileUploadPartSchema, FileSchema]),
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const v = await visit(request)
        const { action, ref, ...rest } = request.body
        const path = request.params['*']
        const opts = { ...uploadOptions(rest), parts: undefined }
        if (action === 'put' && ref === undefined) {
          return reply.code(201).send(await svc.beginUpload(v, path, opts))
        }
        if (action === 'put') return reply.code(200).send(await svc.continueUpload(v, path, ref!, opts))
        if (ref === undefined) throw ERRORS.requestParamsRequired('action=end needs the ref')
        const file = await svc.endUpload(v, path, ref, opts)
        asFile(request, reply)
        return reply.code(201).send(file)
      },
    )

    app.post(
      '/public/bundles/:code/zip',
      {
        config: { auth: false, xml: 'zip' },
        schema: {
          summary: 'A download_uri for a ZIP of shared files and folders, for this address only',
          tags,
          ...open,
          headers: RegistrationHeader,
          params: CodeParams,
          body: ZipBody,
          response: { 200: Type.Object({ download_uri: Type.String() }), ...errorResponses },
        },
      },
      async (request) => svc.zipLink(await visit(request), request.body.paths),
    )

    app.get(
      '/public/bundle_downloads/:token/:name',
      {
        config: { auth: false },
        schema: {
          summary: 'The bytes behind a shared file’s download_uri (Range supported)',
          tags,
          ...open,
          params: LinkParams,
          produces: ['application/octet-stream', 'application/json', 'application/xml'],
          response: {
            200: Type.String({ format: 'binary' }),
            206: Type.String({ format: 'binary' }),
            ...errorResponses,
          },
        },
      },
      async (request, reply) =>
        sendFileBytes(request, reply, downloads, await svc.fileDownload(request.params.token, request.ip)),
    )

    app.get(
      '/public/bundle_zips/:token/:name',
      {
        config: { auth: false },
        schema: {
          summary: 'A ZIP of shared files, streamed (ZIP64 when large)',
          tags,
          ...open,
          params: LinkParams,
          produces: ['application/zip', 'application/json', 'application/xml'],
          response: { 200: Type.String({ format: 'binary' }), ...errorResponses },
        },
      },
      async (request, reply) => {
        const z = await svc.zipEntries(request.params.token, request.ip)
        return sendZip(request, reply, {
          name: z.name,
          directories: z.directories,
          now: c.now(),
          entries: z.entries.map((entry) => ({
            entry,
            name: entry.name,
            size: entry.row.size,
            mtime: entry.row.mtime,
            open: () => svc.open(entry.row),
          })),
          record: (reached) =>
            svc.recordZipEntries(
              z,
              reached.map((r) => r.entry),
              request.ip,
            ),
        })
      },
    )
  }
}
