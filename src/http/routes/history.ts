import { type TSchema, Type } from '@sinclair/typebox'
import { ERRORS } from '../../api/error-factories.js'
import {
  DISPLAY_VALUES,
  FILE_HISTORY,
  FOLDER_HISTORY,
  HISTORY,
  LOGIN_HISTORY,
  USER_HISTORY,
} from '../../modules/history/history-service.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import type { ListFields } from '../schemas.js'
import { DateTimeText, errorResponses, Id, listQuery, Nullable, SAME_AS_PATH_ID } from '../schemas.js'

export const ActionSchema = Type.Object(
  {
    id: Type.Integer(),
    path: Type.String({ description: 'Path the action concerns (for moves and copies: the new path)' }),
    when: Type.String({ format: 'date-time' }),
    destination: Nullable(Type.String()),
    display: Type.String({ description: 'Friendly displayed text (see the display parameter)' }),
    ip: Nullable(Type.String()),
    source: Nullable(Type.String()),
    targets: Type.Array(
      Type.Object(
        {
          type: Type.String({ description: 'file, folder, user, api_key, permission or webhook_settings' }),
          id: Type.Optional(Type.Integer()),
          name: Type.Optional(Type.String()),
        },
        { additionalProperties: true },
      ),
    ),
    user_id: Nullable(Type.Integer()),
    username: Nullable(Type.String()),
    action: Type.String(),
    failure_type: Nullable(Type.String()),
    interface: Nullable(Type.String()),
    user_is_from_parent_site: Type.Boolean({ description: 'Always false: Wharf has no parent sites' }),
  },
  { $id: 'Action', title: 'Action' },
)

const common = {
  start_at: Type.Optional(
    DateTimeText('Leave out actions before this time; blank for no limit', { blank: true }),
  ),
  end_at: Type.Optional(
    DateTimeText('Leave out actions after this time; blank for no limit', { blank: true }),
  ),
  display: Type.Optional(
    Type.Unsafe<string>({
      type: 'string',
      enum: [...DISPLAY_VALUES],
      description: 'Display text: blank (names), full (whole paths) or parent',
    }),
  ),
}

const query = <P extends Record<string, TSchema>>(spec: ListFields, extra: P) =>
  listQuery({ ...common, ...extra }, spec)

// The Files.com SDKs repeat the path parameter in the query string.
const SdkPath = Type.Optional(
  Type.String({ maxLength: 6000, description: 'Ignored: the path is in the URL' }),
)

const FileQuery = query(FILE_HISTORY, { path: SdkPath })
const FolderQuery = query(FOLDER_HISTORY, { path: SdkPath })
const UserQuery = query(USER_HISTORY, {
  user_id: Type.Optional(Id(SAME_AS_PATH_ID)),
})
const LoginQuery = query(LOGIN_HISTORY, {})
const ListQuery = query(HISTORY, {})

const PathParams = Type.Object({ '*': Type.String() })
const UserParams = Type.Object({ user_id: Id('User id') }, { additionalProperties: false })

const tags = ['history']
const listed = { 200: Type.Array(ActionSchema), ...errorResponses }
const xml: [string, string] = ['actions', 'action']

export function historyRoutes(c: HttpContext): Routes {
  const svc = c.services.history
  return async (app) => {
    app.get(
      '/history/files/*',
      {
        config: { access: 'files', xml },
        schema: {
          summary: 'Recent history of a file (last 24 hours), including moves and copies away from it',
          tags,
          params: PathParams,
          querystring: FileQuery,
          response: listed,
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.forFile(request.principal, request.params['*'], request.query)),
    )

    app.get(
      '/history/folders/*',
      {
        config: { access: 'files', xml },
        schema: {
          summary: 'Recent history of a folder and everything inside it (last 24 hours)',
          tags,
          params: PathParams,
          querystring: FolderQuery,
          response: listed,
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.forFolder(request.principal, request.params['*'], request.query)),
    )

    app.get(
      '/history/users/:user_id',
      {
        config: { xml },
        schema: {
          summary: 'Recent actions of a user (last 24 hours; site admins)',
          tags,
          params: UserParams,
          querystring: UserQuery,
          response: listed,
        },
      },
      async (request, reply) => {
        const { user_id } = request.params
        if (request.query.user_id !== undefined && request.query.user_id !== user_id) {
          throw ERRORS.requestParamsInvalid('The user_id in the query differs from the one in the path')
        }
        return sendPage(reply, await svc.forUser(request.principal, user_id, request.query))
      },
    )

    app.get(
      '/history/login',
      {
        config: { xml },
        schema: {
          summary: 'Recent logins and failed logins (last 24 hours; site admins)',
          tags,
          querystring: LoginQuery,
          response: listed,
        },
      },
      async (request, reply) => sendPage(reply, await svc.logins(request.principal, request.query)),
    )

    app.get(
      '/history',
      {
        config: { xml },
        schema: {
          summary: 'All recent actions (last 24 hours; site admins)',
          tags,
          querystring: ListQuery,
          response: listed,
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )
  }
}
