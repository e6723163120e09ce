import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { USER_REQUIRE_2FA } from '../../modules/two-factor/two-factor-service.js'
import {
  EMAIL_PATTERN,
  MAX_USERNAME_LENGTH,
  MIN_PASSWORD_LENGTH,
  USER_LIST,
  USERNAME_PATTERN,
} from '../../modules/users/user-model.js'
import { UserAccessInput, UserAccessJson } from '../access-schemas.js'
import { DeleteBody } from '../delete-by-id.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import {
  DateTime,
  EchoId,
  errorResponses,
  FreeText,
  IdParams,
  listQuery,
  Nullable,
  StringEnum,
} from '../schemas.js'

export const UserSchema = Type.Object(
  {
    id: Type.Integer(),
    username: Type.String(),
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    site_admin: Type.Boolean(),
    self_managed: Type.Boolean({ description: 'false for a Shared/Bot user' }),
    disabled: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    last_login_at: DateTime(),
    password_set_time: DateTime('When the password was last set'),
    password_set_at: DateTime('When the password was last set (the same as password_set_time)'),
    require_password_change: Type.Boolean({ description: 'The next sign-in can only change the password' }),
    password_validity_days: Nullable(
      Type.Integer({ description: "Days the user's password stays valid (the site's rule may be shorter)" }),
    ),
    password_expired: Type.Boolean({
      description: "The password is older than the user's or the site's validity",
    }),
    password_expire_at: DateTime('When the password expires; null if it never does'),
    days_remaining_until_password_expire: Nullable(
      Type.Integer({ description: 'Whole days left, 0 when expired' }),
    ),
    attachments_permission: Type.Boolean({ description: 'May create share links (bundles)' }),
    bundle_permission: Type.Boolean({ description: 'The same flag as attachments_permission' }),
    ...UserAccessJson,
    require_2fa: Type.String({
      description:
        'Two-factor sign-in: use_system_setting (the site’s rule), always_require or never_require',
    }),
    active_2fa: Type.Boolean({ description: 'The user has a confirmed two-factor method' }),
    type_of_2fa: Nullable(
      Type.String({ description: 'totp when the user has a confirmed authenticator; null without one' }),
    ),
  },
  { $id: 'User', title: 'User' },
)

// Lengths are capped here (400 when exceeded); content rules are the service's (422), stated
// here too for the Swagger document, refused as the service refuses them (field-checks.ts).
const fields = {
  username: Type.String({
    maxLength: MAX_USERNAME_LENGTH,
    pattern: USERNAME_PATTERN,
    description: `Letters, digits and @ . _ + -, at most ${MAX_USERNAME_LENGTH}; unique, case-insensitively`,
    ...checked('username'),
  }),
  password: Type.String({
    minLength: MIN_PASSWORD_LENGTH,
    maxLength: 1024,
    description: `At least ${MIN_PASSWORD_LENGTH} characters, and the site's password rules (GET /site)`,
    ...checked('password'),
  }),
  password_confirmation: Type.String({ maxLength: 1024, description: 'If given, must equal password' }),
  name: Nullable(FreeText(255, 'line', 'Full name; null for none')),
  email: Nullable(
    Type.String({
      maxLength: 255,
      pattern: EMAIL_PATTERN,
      description: 'E-mail address; blank or null for none',
      ...checked('email'),
    }),
  ),
  site_admin: Type.Boolean(),
  self_managed: Type.Boolean({ description: 'false makes a Shared/Bot user' }),
  disabled: Type.Boolean({ description: 'Disabled users cannot log in or use their keys' }),
  attachments_permission: Type.Boolean({
    description: 'May create share links (bundles); site admins always may',
  }),
  bundle_permission: Type.Boolean({
    description: 'The same flag as attachments_permission; if both are given they must agree',
  }),
  require_password_change: Type.Boolean({
    description:
      'Site admins: the next sign-in can only change the password; cleared when the user changes it',
  }),
  password_validity_days: Nullable(
    Type.Integer({
      minimum: 0,
      maximum: 3650,
      ...checked('range'),
      description: 'Site admins: days the password stays valid (1 to 3650); null or 0 for none',
    }),
  ),
  require_2fa: StringEnum(USER_REQUIRE_2FA, {
    description: 'Two-factor sign-in: use_system_setting (the site’s rule), always_require or never_require',
  }),
}

// Everything but the username is optional on create; on update everything is.
const optional = {
  password: Type.Optional(fields.password),
  password_confirmation: Type.Optional(fields.password_confirmation),
  name: Type.Optional(fields.name),
  email: Type.Optional(fields.email),
  site_admin: Type.Optional(fields.site_admin),
  self_managed: Type.Optional(fields.self_managed),
  disabled: Type.Optional(fields.disabled),
  attachments_permission: Type.Optional(fields.attachments_permission),
  bundle_permission: Type.Optional(fields.bundle_permission),
  require_password_change: Type.Optional(fields.require_password_change),
  password_validity_days: Type.Optional(fields.password_validity_days),
  ...UserAccessInput,
  require_2fa: Type.Optional(fields.require_2fa),
}

const CreateBody = Type.Object(
  { username: fields.username, ...optional },
  { additionalProperties: false, title: 'UserCreate' },
)

// Read-only: accepted only when equal to the current value, and left out of the document.
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))

const UpdateBody = Type.Object(
  {
    id: EchoId,
    username: Type.Optional(fields.username),
    ...optional,
    // Read-only: the Files.com SDK's `save()` sends every attribute back, so its own values pass.
    created_at: Echo,
    last_login_at: Echo,
    password_set_time: Echo,
    password_set_at: Echo,
    password_expired: Echo,
    password_expire_at: Echo,
    days_remaining_until_password_expire: Echo,
    active_2fa: Echo,
    type_of_2fa: Echo,
  },
  { additionalProperties: false, title: 'UserUpdate' },
)

const ListQuery = listQuery({}, USER_LIST)

const tags = ['users']
const one = { 200: UserSchema, ...errorResponses }
export const reauthHeader = Type.Object({
  'x-service-reauthentication': Type.Optional(
    Type.String({
      description: 'password:<your password>; needed through a session to change a password or delete a user',
    }),
  ),
})

/** X-Service-Reauthentication, or its Files.com alias. */
export function reauthentication(request: FastifyRequest): string | undefined {
  const h = request.headers['x-service-reauthentication'] ?? request.headers['x-files-reauthentication']
  return Array.isArray(h) ? h[0] : h
}

export function userRoutes(c: HttpContext): Routes {
  const svc = c.services.users
  return async (app) => {
    app.get(
      '/users',
      {
        config: { xml: ['users', 'user'] },
        schema: {
          summary: 'List users (site admins: all; others: themselves)',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(UserSchema), ...errorResponses },
        },
      },
      async (request, reply) => {
        return sendPage(reply, await svc.list(request.principal, request.query))
      },
    )

    app.get(
      '/user',
      {
        // A session that must change its password or enrol a two-factor method still learns whose it is.
        config: { xml: 'user', passwordChange: 'any', twoFactorSetup: true },
        schema: {
          summary: "Show the caller's own user (the session's, or the API key's owner)",
          tags,
          response: one,
        },
      },
      async (request) => svc.current(request.principal),
    )

    app.get(
      '/users/:id',
      {
        config: { xml: 'user', passwordChange: 'own-user' },
        schema: { summary: 'Show a user', tags, params: IdParams, response: one },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/users',
      {
        config: { xml: 'user' },
        schema: {
          summary: 'Create a user (site admins)',
          tags,
          body: CreateBody,
          response: { 201: UserSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/users/:id',
      {
        config: { xml: 'user', passwordChange: 'own-user', readOnlySession: 'own-password' },
        schema: {
          summary: 'Update a user (site admins: anyone; others: their own name, email and password)',
          tags,
          params: IdParams,
          headers: reauthHeader,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => {
        const { id: _id, ...input } = request.body
        return svc.update(request.principal, request.params.id, input, reauthentication(request))
      },
    )

    app.delete(
      '/users/:id',
      {
        schema: {
          summary: 'Delete a user (site admins; never yourself)',
          tags,
          params: IdParams,
          headers: reauthHeader,
          body: DeleteBody,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.remove(request.principal, request.params.id, reauthentication(request))
        return reply.code(204).send()
      },
    )
  }
}
