import { Type } from '@sinclair/typebox'
import { PERMISSION_LIST, PERMISSIONS } from '../../modules/permissions/permission-service.js'
import { deleteById } from '../delete-by-id.js'
import { checked, exclusive } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Id, listQuery, Nullable, PathText, UserIdParam } from '../schemas.js'

export const PermissionSchema = Type.Object(
  {
    id: Type.Integer(),
    path: Type.String({ description: 'Folder the permission applies to (and everything inside it)' }),
    user_id: Nullable(Type.Integer({ description: 'The user; null for a group’s permission' })),
    username: Nullable(Type.String()),
    group_id: Nullable(Type.Integer({ description: 'The group; null for a user’s permission' })),
    group_name: Nullable(Type.String()),
    permission: Type.String({ description: 'full, readonly, writeonly, list, history or admin' }),
    recursive: Type.Boolean({ description: 'Always true: permissions apply to subfolders' }),
  },
  { $id: 'Permission', title: 'Permission' },
)

const CreateBody = Type.Object(
  {
    path: PathText('Folder path; not the root'),
    user_id: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'The user: give either user_id or username (one is required)',
        ...exclusive('user', true),
      }),
    ),
    username: Type.Optional(
      Type.String({
        maxLength: 128,
        description: 'The user: give either user_id or username (one is required)',
        ...exclusive('user', true),
      }),
    ),
    group_id: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'The group, instead of a user: group_id or group_name',
        ...exclusive('user', true),
      }),
    ),
    group_name: Type.Optional(
      Type.String({
        maxLength: 255,
        description: 'The group, instead of a user: group_id or group_name',
        ...exclusive('user', true),
      }),
    ),
    permission: Type.Optional(
      Type.Unsafe<string>({
        type: 'string',
        enum: [...PERMISSIONS],
        description: 'Default: full',
        ...checked('permission'),
      }),
    ),
    recursive: Type.Optional(
      Type.Boolean({
        enum: [true],
        description: 'Only true: permissions apply to subfolders',
        ...checked('recursive'),
      }),
    ),
  },
  { additionalProperties: false, title: 'PermissionCreate' },
)

const ListQuery = listQuery(
  {
    path: Type.Optional(PathText('Permissions that apply to this path (on it or above it)')),
    user_id: Type.Optional(UserIdParam),
    group_id: Type.Optional(Id('Permissions of this group')),
  },
  PERMISSION_LIST,
)

const tags = ['permissions']

export function permissionRoutes(c: HttpContext): Routes {
  const svc = c.services.permissions
  return async (app) => {
    app.get(
      '/permissions',
      {
        config: { xml: ['permissions', 'permission'] },
        schema: {
          summary: 'List folder permissions',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(PermissionSchema), ...errorResponses },
        },
      },
      async (request, reply) => {
        return sendPage(reply, await svc.list(request.principal, request.query))
      },
    )

    app.post(
      '/permissions',
      {
        config: { xml: 'permission' },
        schema: {
          summary: 'Grant a folder permission (site admins; folder admins inside their folders)',
          tags,
          body: CreateBody,
          response: { 201: PermissionSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    deleteById(app, '/permissions/:id', { summary: 'Remove a folder permission', tags }, (p, id) =>
      svc.remove(p, id),
    )
  }
}
