import { Type } from '@sinclair/typebox'
import { PERMISSION_SETS } from '../../identity/permission-sets.js'
import { API_KEY_LIST } from '../../modules/api-keys/api-key-service.js'
import { deleteById } from '../delete-by-id.js'
import { checked, exclusive } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import {
  DateTime,
  DateTimeText,
  EchoId,
  errorResponses,
  FreeText,
  IdParams,
  listQuery,
  Nullable,
  PathText,
  UserIdParam,
} from '../schemas.js'

const PermissionSetField = Type.Unsafe<string>({
  type: 'string',
  enum: [...PERMISSION_SETS],
  description: 'What the key may reach (a site-wide key: full only)',
  ...checked('permission-set'),
})

export const ApiKeySchema = Type.Object(
  {
    id: Type.Integer(),
    descriptive_label: Type.String(),
    description: Nullable(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: DateTime(),
    key: Type.Optional(Type.String({ description: 'The key itself; returned only when the key is created' })),
    last_use_at: DateTime('Updated at most once every 3 hours'),
    name: Nullable(Type.String()),
    path: Nullable(Type.String()),
    permission_set: Type.String(),
    platform: Nullable(Type.String()),
    url: Type.String(),
    user_id: Nullable(Type.Integer()),
  },
  { $id: 'ApiKey', title: 'ApiKey' },
)

const Name = FreeText(255, 'line', 'A name for the key')
const Description = FreeText(4096, 'lines', 'What the key is for')
const Expiry = Nullable(
  DateTimeText('When the key stops working, in the future; empty or null for none', { blank: true }),
)

const CreateBody = Type.Object(
  {
    user_id: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: '0 = the caller; not with site_wide',
        ...exclusive('owner'),
      }),
    ),
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    expires_at: Type.Optional(Expiry),
    permission_set: Type.Optional(PermissionSetField),
    path: Type.Optional({
      ...PathText('Folder the key is restricted to; not with site_wide'),
      ...exclusive('site-wide-path'),
    }),
    site_wide: Type.Optional(
      Type.Boolean({
        description: 'Wharf extension: a key with no user, site admins only; not with user_id or path',
        ...exclusive(['owner', 'site-wide-path']),
      }),
    ),
  },
  { additionalProperties: false, title: 'ApiKeyCreate' },
)

/**
 * A read-only ApiKey field: the Files.com SDK's `save()` sends every attribute back. Accepted only
 * when equal to the current value, and left out of the document.
 */
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))

const UpdateBody = Type.Object(
  {
    id: EchoId,
    // Null clears the field (and is what `save()` sends back for an unset one).
    name: Type.Optional(Nullable(Name)),
    description: Type.Optional(Nullable(Description)),
    expires_at: Type.Optional(Expiry),
    permission_set: Type.Optional(PermissionSetField),
    descriptive_label: Echo,
    created_at: Echo,
    key: Echo,
    last_use_at: Echo,
    path: Echo,
    platform: Echo,
    url: Echo,
    user_id: Echo,
  },
  { additionalProperties: false, title: 'ApiKeyUpdate' },
)

const UpdateCurrentBody = Type.Object(
  {
    name: Type.Optional(Name),
    expires_at: Type.Optional(Expiry),
    permission_set: Type.Optional(PermissionSetField),
  },
  { additionalProperties: false },
)

const ListQuery = listQuery(
  {
    user_id: Type.Optional(UserIdParam),
  },
  API_KEY_LIST,
)

const tags = ['api_keys']
const one = { 200: ApiKeySchema, ...errorResponses }

export function apiKeyRoutes(c: HttpContext): Routes {
  const svc = c.services.apiKeys
  return async (app) => {
    app.get(
      '/api_keys',
      {
        config: { xml: ['api-keys', 'api-key'] },
        schema: {
          summary: 'List API keys',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(ApiKeySchema), ...errorResponses },
        },
      },
      async (request, reply) => {
        return sendPage(reply, await svc.list(request.principal, request.query))
      },
    )

    app.get(
      '/api_key',
      {
        config: { xml: 'api-key', access: 'current-key-read' },
        schema: { summary: 'Show the API key of this request', tags, response: one },
      },
      async (request) => svc.getCurrent(request.principal),
    )

    app.get(
      '/api_keys/:id',
      {
        config: { xml: 'api-key' },
        schema: { summary: 'Show an API key', tags, params: IdParams, response: one },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/api_keys',
      {
        config: { xml: 'api-key' },
        schema: {
          summary: 'Create an API key',
          tags,
          body: CreateBody,
          response: { 201: ApiKeySchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/api_key',
      {
        config: { xml: 'api-key', access: 'current-key' },
        schema: {
          summary: 'Update the API key of this request',
          tags,
          body: UpdateCurrentBody,
          response: one,
        },
      },
      async (request) => svc.updateCurrent(request.principal, request.body),
    )

    app.patch(
      '/api_keys/:id',
      {
        config: { xml: 'api-key' },
        schema: { summary: 'Update an API key', tags, params: IdParams, body: UpdateBody, response: one },
      },
      async (request) => svc.update(request.principal, request.params.id, request.body),
    )

    app.delete(
      '/api_key',
      {
        config: { access: 'current-key' },
        schema: {
          summary: 'Delete the API key of this request',
          tags,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.removeCurrent(request.principal)
        return reply.code(204).send()
      },
    )

    deleteById(app, '/api_keys/:id', { summary: 'Delete an API key', tags }, (p, id) => svc.remove(p, id))
  }
}
