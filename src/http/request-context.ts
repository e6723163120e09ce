import type { Principal } from '../identity/principal.js'
import type { Format } from './format.js'

/**
 * What a route may reach:
 * - `general` (default): full-permission keys and sessions only, never a path-restricted key;
 * - `files`: file and share-link operations, also open to the desktop/sync/mobile/office sets;
 * - `current-key-read`: GET /api_key, open to every key, even permission set `none`;
 * - `current-key`: PATCH/DELETE /api_key, open to every key but permission set `none`;
 * - `any-key`: the billing records, which the spec opens to every authenticated key or session
 *   (every permission set but `none`, path-restricted keys too: the records lie in no folder).
 */
export type Access = 'general' | 'files' | 'current-key-read' | 'current-key' | 'any-key'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false for the few routes that take no credentials (POST/DELETE /sessions, swagger). */
    auth?: boolean
    access?: Access
    /**
     * Open to a session whose user must change their password first (everything else is 403
     * `not-authorized/password-change-required`): `any`, or `own-user` when the `id` in the path
     * is the session's own user.
     */
    passwordChange?: 'any' | 'own-user'
    /**
     * What a read-only site admin's request may do here besides GET and HEAD (anything else is
     * 403 `not-authorized/read-only-session`): `reads`, a POST that changes nothing (a download);
     * `own`, their own two-factor methods; `own-password`, their own password (`PATCH` of their
     * own user with `password` and `password_confirmation` only). `own` and `own-password` act with
     * the user's own rights, not a site admin's.
     */
    readOnlySession?: 'reads' | 'own' | 'own-password'
    /** true for the routes a session that must first enrol a two-factor method may reach. */
    twoFactorSetup?: boolean
    /** XML root element: the singular root of a record, or [plural, item] for a list. */
    xml?: string | [string, string]
    /** Number fields the spec types as double: typed float in XML even when whole (`amount` 2010). */
    xmlFloats?: readonly string[]
  }
  interface FastifyInstance {
    /** Every route as registered: method and URL (HEAD routes included). */
    routeTable: { method: string; url: string; schema?: unknown }[]
    /** Compiles the schemas no request has used yet (lazy-compilers.ts); returns how many. */
    compileSchemas(): number
  }
  interface FastifyRequest {
    principal: Principal
    format: Format
  }
}
