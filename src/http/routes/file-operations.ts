import { Type } from '@sinclair/typebox'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { EchoId, errorResponses, IdParams, NewPathText } from '../schemas.js'
import { FileActionSchema } from './file-schemas.js'

// The Files.com SDKs repeat the path parameter in the body.
const SdkPath = Type.Optional(Type.String({ description: 'Ignored: the path is in the URL' }))
const Recursive = Type.Optional(
  Type.Boolean({ description: 'Delete a folder with everything inside it (default false)' }),
)
const Destination = NewPathText('Path of the copy, or the new path (parents are created)')
const Overwrite = Type.Optional(
  Type.Boolean({
    description: 'Replace a file at the destination, or merge a folder into one (default false)',
  }),
)

const DeleteBody = Type.Object({ path: SdkPath, recursive: Recursive }, { additionalProperties: false })
const DeleteByIdBody = Type.Object({ id: EchoId, recursive: Recursive }, { additionalProperties: false })
const CopyBody = Type.Object(
  {
    path: SdkPath,
    destination: Destination,
    overwrite: Overwrite,
    structure: Type.Optional(Type.Boolean({ description: 'Copy only the folder structure, no files' })),
  },
  { additionalProperties: false },
)
const MoveBody = Type.Object(
  { path: SdkPath, destination: Destination, overwrite: Overwrite },
  { additionalProperties: false },
)

const PathParams = Type.Object({
  '*': Type.String({ description: 'File or folder path (slashes raw or %2F)' }),
})

const done = { status: 'completed', file_migration_id: null }

export function fileOperationRoutes(c: HttpContext): Routes {
  const svc = c.services.fileOps
  return async (app) => {
    app.delete(
      '/files/*',
      {
        config: { access: 'files' },
        schema: {
          summary: 'Delete a file, or a folder (recursive for one that is not empty)',
          tags: ['files'],
          params: PathParams,
          body: DeleteBody,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.delete(request.principal, request.params['*'], request.body)
        return reply.code(204).send()
      },
    )

    app.delete(
      '/resource/:id',
      {
        config: { access: 'files' },
        schema: {
          summary: 'Delete a file or folder by its id',
          tags: ['files'],
          params: IdParams,
          body: DeleteByIdBody,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.deleteById(request.principal, request.params.id, request.body)
        return reply.code(204).send()
      },
    )

    app.post(
      '/file_actions/copy/*',
      {
        config: { access: 'files', xml: 'file-action' },
        schema: {
          summary: 'Copy a file or folder',
          tags: ['file_actions'],
          params: PathParams,
          body: CopyBody,
          response: { 201: FileActionSchema, ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.copy(request.principal, request.params['*'], request.body)
        return reply.code(201).send(done)
      },
    )

    app.post(
      '/file_actions/move/*',
      {
        config: { access: 'files', xml: 'file-action' },
        schema: {
          summary: 'Move or rename a file or folder',
          tags: ['file_actions'],
          params: PathParams,
          body: MoveBody,
          response: { 201: FileActionSchema, ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.move(request.principal, request.params['*'], request.body)
        return reply.code(201).send(done)
      },
    )
  }
}
