import type { FrontEndContext } from '../modules/services.js'
import type { RateLimiter } from './rate-limiter.js'

/** What the HTTP front end (and WebDAV under it) is handed: the services, and the request limiter. */
export interface HttpContext extends FrontEndContext {
  rateLimiter: RateLimiter
}
