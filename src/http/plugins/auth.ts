import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import {
  isReadOnlyAdmin,
  type PermissionSet,
  type Principal,
  READ_ONLY_REFUSAL,
} from '../../identity/principal.js'
import { refuseUntilEnrolled } from '../../modules/two-factor/two-factor-service.js'
import { credentialsFrom } from '../credentials.js'
import type { HttpContext } from '../http-context.js'
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
    throw ERRORS.fullPermissionRequired('This API key has permission set "none": it can only read itself')
  }
  if (access === 'current-key' || access === 'any-key') return
  if (access === 'general' && set !== 'full') {
    throw new ApiError(
      ONLY_FOR[set] ?? 'not-authorized/full-permission-required',
      `This API key (permission set ${set}) can only perform file operations`,
    )
  }
  if (access === 'general' && p.apiKey?.path) {
    throw ERRORS.apiKeyIsPathRestricted(`This API key is restricted to the folder ${p.apiKey.path}`)
  }
}

/** Whether a route stays open to a session that must change its password (the route's `passwordChange`). */
function passwordChangeAllowed(
  open: 'any' | 'own-user' | undefined,
  request: FastifyRequest,
  p: Principal,
): boolean {
  if (open === 'any') return true
  if (open !== 'own-user') return false
  const id = (request.params as Record<string, string> | undefined)?.['id']
  return id !== undefined && p.user !== null && Number(id) === p.user.id
}

/** The methods that change nothing: a read-only site admin's sessions and keys may use them everywhere. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The fields of a password change (and the id the SDKs send back): all a read-only site admin may send to `PATCH /users/{own id}`. */
const PASSWORD_FIELDS = new Set(['id', 'password', 'password_confirmation'])

const readOnly = () => ERRORS.readOnlySession(READ_ONLY_REFUSAL)

/**
 * The one place the REST API and the web interface keep read-only site admins from changing
 * anything: every request of theirs that is not a read (GET, HEAD, or a route marked `reads`) is
 * refused, except on the routes marked `own` (their two-factor methods) and `own-password` (their
 * own user, whose body is checked once parsed), which they reach with their own user's rights.
 * Signing out (DELETE /sessions) takes no credentials and is never refused. Returns the principal
 * the route acts as.
 */
function readOnlyPrincipal(p: Principal, request: FastifyRequest, open: string | undefined): Principal {
  if (!isReadOnlyAdmin(p.user) || READS.has(request.method) || open === 'reads') return p
  if (open === 'own') return { ...p, ownRightsOnly: true }
  if (open === 'own-password' && passwordChangeAllowed('own-user', request, p)) {
    return { ...p, ownRightsOnly: true }
  }
  throw readOnly()
}

/** `own-password`: once the body is parsed, anything but the password fields is refused. */
async function onlyPasswordFields(request: FastifyRequest): Promise<void> {
  if (request.principal.ownRightsOnly !== true) return
  const body = (request.body ?? {}) as Record<string, unknown>
  if (!Object.keys(body).some((k) => body[k] !== undefined && !PASSWORD_FIELDS.has(k))) return
  throw readOnly()
}

/**
 * Authentication, request limits and permission-set checks for every route of the API. Each route
 * gets its own hook, built once from its config, so no request pays for reading route options.
 */
export function registerAuth(app: FastifyInstance, c: HttpContext): void {
  app.addHook('onRoute', (route) => {
    if (route.config?.auth === false) return
    const access: Access = route.config?.access ?? 'general'
    const passwordChange = route.config?.passwordChange
    const enrolment = route.config?.twoFactorSetup
    const readOnlyOpen = route.config?.readOnlySession
    const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
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
      checkAccess(principal, access)
      // Only a session can be held to a password change: a key's request has nothing to wait for.
      const changing =
        principal.sessionHash !== null &&
        (await c.services.passwords.restrictSession(
          principal,
          passwordChangeAllowed(passwordChange, request, principal),
        ))
      // A session that must change its password and enrol does the change first: while it
      // must, the change's routes stay open to it.
      refuseUntilEnrolled(principal, enrolment === true || changing)
      request.principal = readOnlyPrincipal(principal, request, readOnlyOpen)
    }
    const own = route.onRequest ? [route.onRequest].flat() : []
    route.onRequest = [authenticate, ...own] as typeof route.onRequest
    if (readOnlyOpen === 'own-password') {
      const before = route.preHandler ? [route.preHandler].flat() : []
      route.preHandler = [onlyPasswordFields, ...before] as typeof route.preHandler
    }
  })
}
