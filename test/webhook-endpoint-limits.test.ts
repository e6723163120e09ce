import { describe, expect, it } from 'vitest'
import { EndpointLimits } from '../src/webhooks/endpoints/endpoint-limits.js'

describe('webhook endpoint limits', () => {
  it('caps the requests in flight to an endpoint, and frees a slot when one ends', () => {
    const limits = new EndpointLimits(() => 0)
    const e = { id: 1, concurrency: 2, rate_limit: null }
    expect([limits.tryStart(e), limits.tryStart(e), limits.tryStart(e)]).toEqual([true, true, false])
    limits.ended(e)
    expect(limits.tryStart(e)).toBe(true)
    // Another endpoint is not held back by this one's cap.
    expect(limits.tryStart({ id: 2, concurrency: 1, rate_limit: null })).toBe(true)
    // Nor is one without limits.
    expect(limits.tryStart(undefined)).toBe(true)
  })

  it('allows an endpoint its rate per second, in bursts of one second at most, and says when a token comes', () => {
    let now = 0
    const limits = new EndpointLimits(() => now)
    const e = { id: 1, concurrency: null, rate_limit: 2 }
    const start = () => {
      const ok = limits.tryStart(e)
      if (ok) limits.ended(e)
      return ok
    }
    expect([start(), start(), start()]).toEqual([true, true, false])
    expect(limits.retryIn(e)).toBe(500)
    now = 499
    expect(start()).toBe(false)
    now = 500
    expect(start()).toBe(true)
    // Ten idle seconds still give a burst of two, not twenty.
    now = 10_500
    expect([start(), start(), start()]).toEqual([true, true, false])
  })
})
