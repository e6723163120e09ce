import type { FastifyInstance } from 'fastify'
import type { Container } from '../../container.js'

export function userRoutes(_c: Container) {
  return async (_app: FastifyInstance) => {}
}
