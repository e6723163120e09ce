import { Type } from '@sinclair/typebox'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, listQuery } from '../schemas.js'

export const BannedAddressSchema = Type.Object(
  {
    address: Type.String({ description: 'The client address (IPv4, or IPv6 in its short form)' }),
    banned_at: Type.String({ format: 'date-time' }),
    banned_until: Type.String({ format: 'date-time', description: 'Logins from it are refused until then' }),
    failures: Type.Integer({ description: 'Failed logins within the window that led to the ban' }),
  },
  { $id: 'BannedAddress', title: 'BannedAddress' },
)

const AddressParams = Type.Object({
  address: Type.String({
    minLength: 2,
    maxLength: 45,
    // The characters of IPv4 and IPv6 text; whether it is an address is the service's check.
    pattern: '^[0-9A-Fa-f.:]+$',
    description: 'An IPv4 or IPv6 address, e.g. 192.0.2.7 or 2001:db8::7',
  }),
})

const tags = ['banned_addresses']

/**
 * Addresses the login defender has banned after too many failed logins (a Wharf extension):
 * site admins list them and lift a ban.
 */
export function bannedAddressRoutes(c: HttpContext): Routes {
  const svc = c.services.loginDefender
  return async (app) => {
    app.get(
      '/banned_addresses',
      {
        config: { xml: ['banned-addresses', 'banned-address'] },
        schema: {
          summary: 'List client addresses banned for too many failed logins (site admins)',
          tags,
          querystring: listQuery({}),
          response: { 200: Type.Array(BannedAddressSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )

    app.delete(
      '/banned_addresses/:address',
      {
        schema: {
          summary: 'Lift the ban of an address and forget its failed logins (site admins)',
          tags,
          params: AddressParams,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.lift(request.principal, request.params.address)
        return reply.code(204).send()
      },
    )
  }
}
