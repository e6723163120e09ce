import { Type } from '@sinclair/typebox'
import { DeleteBody } from '../delete-by-id.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { DateTime, EchoId, errorResponses, FreeText, IdParams, StringEnum, UserIdParam } from '../schemas.js'
import { reauthentication, reauthHeader } from './users.js'

export const TwoFactorMethodSchema = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer(),
    method_type: Type.String({ description: 'totp' }),
    name: Type.String(),
    confirmed: Type.Boolean({ description: 'false until a first code has been entered (PATCH with otp)' }),
    created_at: Type.String({ format: 'date-time' }),
    setup_expires_at: DateTime('Until when an unconfirmed method can be confirmed; null once confirmed'),
    otpauth_uri: Type.Optional(
      Type.String({
        description: 'Only when created: the otpauth:// URI for an authenticator app (its QR code)',
      }),
    ),
    recovery_codes: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Only when confirmed: one-time codes, each usable once instead of a code; shown this once',
      }),
    ),
  },
  { $id: 'TwoFactorAuthenticationMethod', title: 'TwoFactorAuthenticationMethod' },
)

const CreateBody = Type.Object(
  {
    method_type: StringEnum(['totp'], { description: 'totp (the only method offered)' }),
    name: Type.Optional(FreeText(255, 'line', 'A name for the authenticator')),
  },
  { additionalProperties: false, title: 'TwoFactorAuthenticationMethodCreate' },
)

const UpdateBody = Type.Object(
  {
    id: EchoId,
    otp: Type.String({ minLength: 1, maxLength: 64, description: 'A code the authenticator shows now' }),
  },
  { additionalProperties: false, title: 'TwoFactorAuthenticationMethodUpdate' },
)

const ListQuery = Type.Object({ user_id: Type.Optional(UserIdParam) }, { additionalProperties: false })

const tags = ['two_factor_authentication_methods']
const one = { 200: TwoFactorMethodSchema, ...errorResponses }
const XML_ONE = 'two-factor-authentication-method'

/**
 * The TwoFactorAuthenticationMethod resource (TOTP authenticators) and the site's two-factor
 * rule. A session that must enrol first reaches these routes and GET /user only.
 */
export function twoFactorRoutes(c: HttpContext): Routes {
  const svc = c.services.twoFactor
  return async (app) => {
    app.get(
      '/two_factor_authentication_methods',
      {
        config: { xml: ['two-factor-authentication-methods', XML_ONE], twoFactorSetup: true },
        schema: {
          summary: 'List two-factor methods (your own; site admins: a user_id’s)',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(TwoFactorMethodSchema), ...errorResponses },
        },
      },
      async (request) => svc.list(request.principal, request.query.user_id),
    )

    app.get(
      '/two_factor_authentication_methods/:id',
      {
        config: { xml: XML_ONE, twoFactorSetup: true },
        schema: { summary: 'Show a two-factor method', tags, params: IdParams, response: one },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/two_factor_authentication_methods',
      {
        config: { xml: XML_ONE, twoFactorSetup: true, readOnlySession: 'own' },
        schema: {
          summary: 'Start enrolling a TOTP authenticator: answers its otpauth:// URI, this once',
          tags,
          body: CreateBody,
          response: { 201: TwoFactorMethodSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/two_factor_authentication_methods/:id',
      {
        config: { xml: XML_ONE, twoFactorSetup: true, readOnlySession: 'own' },
        schema: {
          summary: 'Confirm an enrolment with a code from the authenticator; answers the recovery codes',
          tags,
          params: IdParams,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => svc.confirm(request.principal, request.params.id, request.body.otp),
    )

    app.delete(
      '/two_factor_authentication_methods/:id',
      {
        config: { twoFactorSetup: true, readOnlySession: 'own' },
        schema: {
          summary:
            'Remove a two-factor method (through a session: X-Service-Reauthentication with the password)',
          tags,
          params: IdParams,
          headers: reauthHeader,
          body: DeleteBody,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.get(request.principal, request.params.id)
        await c.services.sessions.reauthenticate(request.principal, reauthentication(request))
        await svc.remove(request.principal, request.params.id)
        return reply.code(204).send()
      },
    )
  }
}
