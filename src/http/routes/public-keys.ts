import { Type } from '@sinclair/typebox'
import { deleteById } from '../delete-by-id.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { DateTime, EchoId, errorResponses, FreeText, IdParams, listQuery, UserIdParam } from '../schemas.js'

export const PublicKeySchema = Type.Object(
  {
    id: Type.Integer(),
    title: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    fingerprint: Type.String({ description: 'MD5 of the key, colon-separated hex' }),
    fingerprint_sha256: Type.String({
      description: 'SHA-256 of the key, unpadded base64 (as ssh-keygen -l shows it after "SHA256:")',
    }),
    last_login_at: DateTime('Last SFTP login with this key'),
    username: Type.String(),
    user_id: Type.Integer(),
    public_key: Type.String({ description: 'The key in OpenSSH form, without its comment' }),
  },
  { $id: 'PublicKey', title: 'PublicKey' },
)

const Title = Type.String({ ...FreeText(255, 'line', 'A name for the key'), minLength: 1 })

const CreateBody = Type.Object(
  {
    title: Title,
    public_key: Type.String({
      minLength: 1,
      maxLength: 16384,
      description: 'An SSH public key: a line of a .pub file (OpenSSH), RFC 4716 or PEM',
    }),
    user_id: Type.Optional(UserIdParam),
  },
  { additionalProperties: false, title: 'PublicKeyCreate' },
)

/** What the SDK's `save()` sends back: only `title` may change; the rest must match or be left out. */
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))
const UpdateBody = Type.Object(
  {
    id: EchoId,
    title: Title,
    created_at: Echo,
    fingerprint: Echo,
    fingerprint_sha256: Echo,
    last_login_at: Echo,
    username: Echo,
    user_id: Echo,
    public_key: Echo,
  },
  { additionalProperties: false, title: 'PublicKeyUpdate' },
)

const ListQuery = listQuery({ user_id: Type.Optional(UserIdParam) })

const tags = ['public_keys']
const one = { 200: PublicKeySchema, ...errorResponses }

/** The PublicKey resource: users' SSH keys for SFTP logins. */
export function publicKeyRoutes(c: HttpContext): Routes {
  const svc = c.services.publicKeys
  return async (app) => {
    app.get(
      '/public_keys',
      {
        config: { xml: ['public-keys', 'public-key'] },
        schema: {
          summary: 'List SSH public keys (site admins: every user’s; others: their own)',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(PublicKeySchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )

    app.get(
      '/public_keys/:id',
      {
        config: { xml: 'public-key' },
        schema: { summary: 'Show an SSH public key', tags, params: IdParams, response: one },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/public_keys',
      {
        config: { xml: 'public-key' },
        schema: {
          summary: 'Add an SSH public key for SFTP logins',
          tags,
          body: CreateBody,
          response: { 201: PublicKeySchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/public_keys/:id',
      {
        config: { xml: 'public-key' },
        schema: {
          summary: 'Rename an SSH public key',
          tags,
          params: IdParams,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => svc.update(request.principal, request.params.id, request.body),
    )

    deleteById(app, '/public_keys/:id', { summary: 'Delete an SSH public key', tags }, (p, id) =>
      svc.remove(p, id),
    )
  }
}
