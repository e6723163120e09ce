import { type Static, Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { MAX_PARTS } from '../../modules/files/upload-parts.js'
import type { UploadOptions } from '../../modules/files/upload-rules.js'
import { checked, exclusive } from '../field-checks.js'
import { sendFileBytes } from '../file-bytes.js'
import { toXml } from '../format.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { DateTimeText, errorResponses, Id, PathText } from '../schemas.js'
import { FileSchema, FileUploadPartSchema } from './file-schemas.js'

// The file path is the rest of the URL, raw (`a/b.txt`) or encoded as the SDKs send it (`a%2Fb.txt`).
const PathParams = Type.Object({ '*': Type.String({ description: 'File path' }) })

/** The SDKs repeat the path as a parameter; the one in the URL is the one used. */
const EchoPath = Type.Optional(
  Type.String({ maxLength: 6000, description: 'Ignored: the path is the URL’s' }),
)

const uploadFields = {
  ref: Type.Optional(
    Type.String({ maxLength: 128, description: 'The upload, from the first FileUploadPart' }),
  ),
  part: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PARTS,
      description: `First part number, 1 to ${MAX_PARTS} (default 1); part + parts - 1 must not exceed ${MAX_PARTS}`,
      ...checked('part'),
    }),
  ),
  parts: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_PARTS, description: 'How many part URLs to give' }),
  ),
  size: Type.Optional(Type.Integer({ minimum: 0, description: 'Accepted and ignored' })),
  length: Type.Optional(Type.Integer({ minimum: 0, description: 'Accepted and ignored' })),
  restart: Type.Optional(
    Type.Integer({ enum: [0], description: 'Only 0 is supported', ...checked('restart') }),
  ),
  mkdir_parents: Type.Optional(Type.Boolean({ description: 'Create missing parent folders (default true)' })),
  provided_mtime: Type.Optional(DateTimeText('Last modified, as the client says')),
  with_rename: Type.Optional(Type.Boolean({ description: 'If the path is taken, save as "name (1).ext"…' })),
  etags: Type.Optional(Type.Unknown({ description: 'Accepted and ignored' })),
  path: EchoPath,
}

export const UploadBody = Type.Object(
  {
    // Required: without it the request is neither step of an upload.
    action: Type.Unsafe<'put' | 'end'>({
      type: 'string',
      enum: ['put', 'end'],
      description: 'put opens an upload or gives the URL of a part (with ref); end (with ref) finishes it',
    }),
    ...uploadFields,
  },
  { additionalProperties: false },
)
const BeginUploadBody = Type.Object(uploadFields, { additionalProperties: false })

const ignoredQuery = {
  preview_size: Type.Optional(Type.String({ maxLength: 32, description: 'Accepted and ignored' })),
  with_previews: Type.Optional(Type.Boolean({ description: 'Accepted and ignored' })),
  with_priority_color: Type.Optional(Type.Boolean({ description: 'Accepted and ignored' })),
  path: EchoPath,
}
const DownloadQuery = Type.Object(
  {
    action: Type.Optional(
      Type.Unsafe<'' | 'stat' | 'redirect'>({
        type: 'string',
        enum: ['', 'stat', 'redirect'],
        description: 'stat: no download_uri; redirect: 302 to the download_uri',
      }),
    ),
    ...ignoredQuery,
  },
  { additionalProperties: false },
)
const MetadataQuery = Type.Object(ignoredQuery, { additionalProperties: false })

const ResourceDownloadBody = Type.Object(
  {
    path: Type.Optional({
      ...PathText('The file: give either path or id (one is required)'),
      ...exclusive('file', true),
    }),
    id: Type.Optional({
      ...Id('The file: give either path or id (one is required)'),
      ...exclusive('file', true),
    }),
  },
  { additionalProperties: false },
)

const Bytes = Type.String({ format: 'binary', description: 'The file’s bytes (206: the range asked for)' })
const tags = ['files']

export function uploadOptions(b: Static<typeof BeginUploadBody>): UploadOptions {
  return {
    part: b.part,
    parts: b.parts,
    restart: b.restart,
    mkdirParents: b.mkdir_parents,
    withRename: b.with_rename,
    providedMtime:
      b.provided_mtime === undefined ? undefined : parseDateTime(b.provided_mtime, 'provided_mtime'),
  }
}

/** The file's XML root on a route whose XML root is otherwise a FileUploadPart. */
export function asFile(request: FastifyRequest, reply: FastifyReply): void {
  if (request.format === 'xml') reply.serializer((payload: unknown) => toXml(payload, 'file'))
}

export function fileRoutes(c: HttpContext): Routes {
  const uploads = c.services.uploads
  const downloads = c.services.downloads
  return async (app) => {
    app.post(
      '/files/*',
      {
        config: { access: 'files', xml: 'file-upload-part' },
        schema: {
          summary:
            'Upload a file: action=put opens an upload or gives the URL of a part, action=end finishes it',
          tags,
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
        const { action, ref, ...rest } = request.body
        const path = request.params['*']
        const opts = { ...uploadOptions(rest), parts: undefined }
        if (action === 'put' && ref === undefined) {
          const [first] = await uploads.begin(request.principal, path, opts)
          return reply.code(201).send(first)
        }
        if (action === 'put') {
          const [part] = await uploads.continue(request.principal, path, ref!, opts)
          return reply.code(200).send(part)
        }
        if (action === 'end') {
          if (ref === undefined) throw ERRORS.requestParamsRequired('action=end needs the ref')
          const file = await uploads.end(request.principal, path, ref, opts)
          asFile(request, reply)
          return reply.code(201).send(file)
        }
        throw ERRORS.requestParamsInvalid('action must be put or end')
      },
    )

    app.post(
      '/file_actions/begin_upload/*',
      {
        config: { access: 'files', xml: ['file-upload-parts', 'file-upload-part'] },
        schema: {
          summary: 'Open an upload (or continue one, given its ref) and get the URLs of its first parts',
          tags,
          params: PathParams,
          body: BeginUploadBody,
          response: { 201: Type.Array(FileUploadPartSchema), ...errorResponses },
        },
      },
      async (request, reply) => {
        const { ref, ...rest } = request.body
        const path = request.params['*']
        const opts = uploadOptions(rest)
        const parts =
          ref === undefined
            ? await uploads.begin(request.principal, path, opts)
            : await uploads.continue(request.principal, path, ref, opts)
        return reply.code(201).send(parts)
      },
    )

    app.get(
      '/files/*',
      {
        config: { access: 'files', xml: 'file' },
        schema: {
          summary: 'A file with a signed, expiring download_uri (action=redirect: 302 to it)',
          tags,
          params: PathParams,
          querystring: DownloadQuery,
          response: { 200: FileSchema, 302: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        const action = request.query.action ?? ''
        const file = await downloads.find(request.principal, request.params['*'], action !== 'stat')
        if (action === 'redirect') return reply.redirect(file.download_uri!, 302)
        return file
      },
    )

    app.get(
      '/file_actions/metadata/*',
      {
        config: { access: 'files', xml: 'file' },
        schema: {
          summary: 'A file’s or folder’s metadata (no download_uri)',
          tags,
          params: PathParams,
          querystring: MetadataQuery,
          response: { 200: FileSchema, ...errorResponses },
        },
      },
      async (request) => downloads.metadata(request.principal, request.params['*']),
    )

    app.post(
      '/resources/download',
      {
        config: { access: 'files', readOnlySession: 'reads' },
        schema: {
          summary: 'Download a file by path or id: the bytes themselves, with Range support',
          tags,
          body: ResourceDownloadBody,
          // Errors are JSON (or XML, by Accept) like everywhere else.
          produces: ['application/octet-stream', 'application/json', 'application/xml'],
          response: { 200: Bytes, 206: Bytes, ...errorResponses },
        },
      },
      async (request, reply) => {
        const { path, id } = request.body
        if (path !== undefined && id !== undefined) {
          throw ERRORS.requestParamsInvalid('Give either path or id, not both')
        }
        if (path === undefined && id === undefined) {
          throw ERRORS.requestParamsRequired('Give the path or the id of the file')
        }
        const d = await downloads.forCaller(request.principal, { path, id })
        return sendFileBytes(request, reply, downloads, d)
      },
    )
  }
}
