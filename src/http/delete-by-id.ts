import { Type } from '@sinclair/typebox'
import type { Principal } from '../identity/principal.js'
import type { Access } from './request-context.js'
import type { Routes } from './route-types.js'
import { EchoId, errorResponses, IdParams } from './schemas.js'

/** The body a delete by id takes: nothing, or the path's id again (the Files.com SDKs send it). */
export const DeleteBody = Type.Object({ id: EchoId }, { additionalProperties: false })

/**
 * `DELETE <collection>/:id`: the record named by the path goes, and the answer is 204 with no
 * body. The service decides who may delete it and answers 404 for an id it does not show.
 */
export function deleteById(
  app: Parameters<Routes>[0],
  url: `${string}/:id`,
  schema: { summary: string; tags: string[] },
  remove: (principal: Principal, id: number) => Promise<void>,
  /** Which keys reach the route (request-context.ts); the default is full keys only. */
  access?: Access,
): void {
  app.delete(
    url,
    {
      ...(access ? { config: { access } } : {}),
      schema: {
        ...schema,
        params: IdParams,
        body: DeleteBody,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await remove(request.principal, request.params.id)
      return reply.code(204).send()
    },
  )
}
