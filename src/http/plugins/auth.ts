import type { FastifyInstance } from 'fastify'
import type { Container } from '../../container.js'
import { credentialsFrom } from '../../modules/auth/auth-service.js'
import type { PermissionSet, Principal } from '../../modules/auth/principal.js'
import { ApiError } from '../errors.js'
import type { Access } from '../request-context.js'

const ONLY_FOR: Record<string, ApiError['type']> = {
  desktop_app: 'not-authorized/api-key-only-for-desktop-app',
  sync_app: 'not-authorized/api-key-only-for-desktop-app',
  mobile_app: 'not-authorized/api-key-only-for-mobile-app',
  office_integration: 'not-authorized/api-key-only-for-office-integration',
}

/** Refuses a key whose permission set or folder restriction does not reach the route. */
export function checkAccess(p: Principal, access: Access): void {
  const set: PermissionSet = p.permissionSet
  if (access === 'current-key-read') return
  if (set === 'none') {
    throw new ApiError(
      'not-authorized/full-permission-required',
      'This API key has permission set "none": it can only read itself',
    )
  }
  if (access === 'current-key') return
  if (access === 'general' && set !== 'full') {
    throw new ApiError(
      ONLY_FOR[set] ?? 'not-authorized/full-permission-required',
      `This API key (permission set ${set}) can only perform file operations`,
    )
  }
  if (access === 'general' && p.apiKey?.path) {
    throw new ApiError(
      'not-authorized/api-key-is-path-restricted',
      `This API key is restricted to the folder ${p.apiKey.path}`,
    )
  }
}

/** Authentication, request limits and permission-set checks for every route of the API. */
export function registerAuth(app: FastifyInstance, c: Container): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return
    const cfg = request.routeOptions.config
    if (cfg.auth === false) return
    const principal = await c.services.auth.authenticate(
      credentialsFrom(request.headers),
      request.ip,
      'restapi',
    )
    request.principal = principal
    const release = c.rateLimiter.acquire(
      principal.apiKey ? `k${principal.apiKey.id}` : `s${principal.sessionHash}`,
    )
    reply.raw.once('close', release)
    checkAccess(principal, cfg.access ?? 'general')
  })
}
