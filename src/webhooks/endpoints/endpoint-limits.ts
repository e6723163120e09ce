import { performance } from 'node:perf_hooks'

/** What the limits read of an endpoint. */
export interface Limited {
  id: number
  concurrency: number | null
  rate_limit: number | null
}

interface Use {
  inflight: number
  /** Token bucket of the rate limit: tokens, and when they were counted (ms, monotonic). */
  tokens: number
  at: number
}

/**
 * Each endpoint's concurrency cap and rate limit, in this process: a delivery starts only while
 * its endpoint has fewer requests in flight than its cap, and a token of its rate (requests per
 * second, bursts of up to one second's worth). What may not start yet waits, claimed, in its
 * order; `retryIn` says when a token comes.
 */
export class EndpointLimits {
  private readonly uses = new Map<number, Use>()

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** Whether a delivery to `e` may start now; when it may, it is counted as started. */
  tryStart(e: Limited | undefined): boolean {
    if (e === undefined || (e.concurrency === null && e.rate_limit === null)) {
      if (e !== undefined) this.use(e.id).inflight++
      return true
    }
    const u = this.use(e.id)
    if (e.concurrency !== null && u.inflight >= e.concurrency) return false
    if (e.rate_limit !== null) {
      const now = this.clock()
      u.tokens = Math.min(e.rate_limit, u.tokens + ((now - u.at) / 1000) * e.rate_limit)
      u.at = now
      if (u.tokens < 1) return false
      u.tokens -= 1
    }
    u.inflight++
    return true
  }

  ended(e: Limited | undefined): void {
    if (e === undefined) return
    const u = this.uses.get(e.id)
    if (u === undefined) return
    u.inflight--
    if (u.inflight <= 0 && !Number.isFinite(u.tokens)) this.uses.delete(e.id)
  }

  /** Milliseconds until `e` has a token again (0 when it has one or has no rate limit). */
  retryIn(e: Limited | undefined): number {
    if (e === undefined || e.rate_limit === null) return 0
    const u = this.uses.get(e.id)
    if (u === undefined || u.tokens >= 1) return 0
    return Math.ceil(((1 - u.tokens) / e.rate_limit) * 1000)
  }

  private use(id: number): Use {
    let u = this.uses.get(id)
    if (u === undefined) {
      u = { inflight: 0, tokens: Number.POSITIVE_INFINITY, at: this.clock() }
      this.uses.set(id, u)
    }
    return u
  }
}
