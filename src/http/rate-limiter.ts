import { ERRORS } from '../api/error-factories.js'

export interface RateLimitSettings {
  perSecond: number
  burst: number
  concurrent: number
}

interface Bucket {
  tokens: number
  at: number
  inFlight: number
}

/**
 * Per-credential request limits, kept in this process's memory: a token bucket (sustained rate
 * with a burst) and a count of requests in flight. Several processes each enforce the limit.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>()
  private sweepAt = 0

  constructor(
    private readonly s: RateLimitSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one request; returns the release function, or throws a rate-limited ApiError. */
  acquire(id: string): () => void {
    const now = this.now()
    this.sweep(now)
    let b = this.buckets.get(id)
    if (!b) {
      b = { tokens: this.s.burst, at: now, inFlight: 0 }
      this.buckets.set(id, b)
    } else {
      // A clock stepped back (NTP) counts as no time passing, not as tokens owed.
      b.tokens = Math.min(this.s.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.s.perSecond)
      b.at = now
    }
    if (b.inFlight >= this.s.concurrent) {
      throw ERRORS.tooManyConcurrentRequests(`More than ${this.s.concurrent} requests in flight`, {
        retryAfter: 1,
      })
    }
    if (b.tokens < 1) {
      const wait = Math.max(1, Math.ceil((1 - b.tokens) / this.s.perSecond))
      throw ERRORS.tooManyRequests(`Too many requests: the limit is ${this.s.perSecond} per second`, {
        retryAfter: wait,
      })
    }
    b.tokens -= 1
    b.inFlight += 1
    const bucket = b
    let released = false
    return () => {
      if (released) return
      released = true
      bucket.inFlight -= 1
    }
  }

  /** Forgets idle, full buckets now and then so the map does not grow without bound. */
  private sweep(now: number): void {
    if (now < this.sweepAt) return
    this.sweepAt = now + 60_000
    const refill = (this.s.burst / this.s.perSecond) * 1000
    for (const [id, b] of this.buckets) {
      if (b.inFlight === 0 && now - b.at > refill) this.buckets.delete(id)
    }
  }
}
