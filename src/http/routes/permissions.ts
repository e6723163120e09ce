import type { FastifyInstance } from 'fastify'
import type { Container } from '../../container.js'

export function permissionRoutes(_c: Container) {
  return async (_app: FastifyInstance) => {}
}
