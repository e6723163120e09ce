import { Type } from '@sinclair/typebox'
import { ERRORS } from '../../api/error-factories.js'
import { credentialsFrom } from '../credentials.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses } from '../schemas.js'

const LoginBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    otp: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          'For a user with two-factor sign-in: the code of their authenticator, or a recovery code',
      }),
    ),
  },
  { additionalProperties: false },
)

const SessionJson = Type.Object({
  id: Type.String({ description: 'Session id, sent in X-ServiceAPI-Auth' }),
  read_only: Type.Optional(
    Type.Boolean({
      description: 'The session can change nothing (a read-only site administrator’s): see decisions.md',
    }),
  ),
})

export function sessionRoutes(c: HttpContext): Routes {
  return async (app) => {
    app.post(
      '/sessions',
      {
        config: { auth: false, xml: 'session' },
        schema: {
          summary: 'Create a session (log in)',
          tags: ['sessions'],
          security: [],
          body: LoginBody,
          response: { 201: SessionJson, ...errorResponses },
        },
      },
      async (request, reply) => {
        if (credentialsFrom(request.headers).apiKey !== undefined) {
          throw ERRORS.cannotLoginWhileUsingKey('Remove the API key header to log in with a password')
        }
        const session = await c.services.sessions.login(c.site.id, {
          username: request.body.username,
          password: request.body.password,
          otp: request.body.otp,
          ip: request.ip,
          // The web interface says so on its login; its session's actions are then recorded as `web`.
          interface: request.headers['x-wharf-interface'] === 'web' ? 'web' : 'restapi',
        })
        return reply.code(201).send(session)
      },
    )

    app.delete(
      '/sessions',
      {
        config: { auth: false, xml: ['sessions', 'session'] },
        schema: {
          summary: 'End the session of X-ServiceAPI-Auth; always answers an empty array',
          tags: ['sessions'],
          security: [],
          response: { 200: Type.Array(SessionJson) },
        },
      },
      async (request) => {
        await c.services.sessions.logout(credentialsFrom(request.headers).sessionId)
        return []
      },
    )
  }
}
