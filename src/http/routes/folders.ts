import { Type } from '@sinclair/typebox'
import { FOLDER_LIST } from '../../modules/files/folder-service.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { DateTimeText, errorResponses, listQuery, Nullable, StringEnum } from '../schemas.js'
import { FileSchema } from './file-schemas.js'

// The Files.com SDKs repeat the path parameter in the query string or body.
const SdkPath = Type.Optional(Type.String({ description: 'Ignored: the path is in the URL' }))
const Ignored = (t: string) => ({ description: `Accepted for Files.com compatibility; ${t}` })

export const FolderListQuery = listQuery(
  {
    path: SdkPath,
    search: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: 'Only files and folders whose name contains this (any depth inside the folder)',
      }),
    ),
    search_all: Type.Optional(
      Type.Boolean({ description: 'With search: look through the whole site (list the root folder)' }),
    ),
    type: Type.Optional(StringEnum(['file', 'folder'], { description: 'Only files or only folders' })),
    modified_at_datetime: Type.Optional(DateTimeText('With type: only what was modified after this time')),
    preview_size: Type.Optional(Type.String({ maxLength: 64, ...Ignored('Wharf makes no previews') })),
    with_previews: Type.Optional(Type.Boolean(Ignored('Wharf makes no previews'))),
    with_priority_color: Type.Optional(Type.Boolean(Ignored('priority_color is always null'))),
    search_custom_metadata_key: Type.Optional(
      Type.String({ maxLength: 1000, ...Ignored('custom metadata is not searched') }),
    ),
  },
  FOLDER_LIST,
)

const MkdirBody = Type.Object(
  {
    path: SdkPath,
    mkdir_parents: Type.Optional(
      Nullable(
        Type.Boolean({ description: 'Create missing parent folders too (default false; null: false)' }),
      ),
    ),
    provided_mtime: Type.Optional(
      Nullable(DateTimeText('Last modified time to record, as the client saw it; null for none')),
    ),
  },
  { additionalProperties: false },
)

const PathParams = Type.Object({ '*': Type.String({ description: 'Folder path (slashes raw or %2F)' }) })

const tags = ['folders']

export function folderRoutes(c: HttpContext): Routes {
  const svc = c.services.folders
  return async (app) => {
    const listSchema = {
      summary: 'List a folder’s contents, or search inside it',
      tags,
      querystring: FolderListQuery,
      response: { 200: Type.Array(FileSchema), ...errorResponses },
    }
    const list = { config: { access: 'files' as const, xml: ['files', 'file'] as [string, string] } }

    app.get(
      '/folders',
      { ...list, schema: { ...listSchema, summary: 'List the root folder, or search the site' } },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, '', request.query)),
    )

    app.get(
      '/folders/*',
      { ...list, schema: { ...listSchema, params: PathParams } },
      async (request, reply) =>
        sendPage(reply, await svc.list(request.principal, request.params['*'], request.query)),
    )

    app.post(
      '/folders/*',
      {
        config: { access: 'files', xml: 'file' },
        schema: {
          summary: 'Create a folder',
          tags,
          params: PathParams,
          body: MkdirBody,
          response: { 201: FileSchema, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await svc.mkdir(request.principal, request.params['*'], request.body)),
    )
  }
}
