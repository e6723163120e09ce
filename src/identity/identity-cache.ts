import type { ApiKeyRow, UserRow } from './principal.js'

export interface CachedKey {
  row: ApiKeyRow
  user: UserRow | null
  at: number
}

/**
 * A short-lived, per-process memory of API keys already looked up, so that a busy key does not
 * cost a database read per request. Any change to keys or users made through this process clears
 * it at once; a change made by another process (PostgreSQL deployments) is seen within the TTL.
 * Expiry is still checked on every request against the cached `expires_at`.
 */
export class IdentityCache {
  private readonly keys = new Map<string, CachedKey>()
  private readonly listeners: (() => void)[] = []

  constructor(
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {}

  get(hash: string, now: number): CachedKey | undefined {
    if (this.ttlMs <= 0) return undefined
    const hit = this.keys.get(hash)
    if (hit === undefined) return undefined
    if (now - hit.at >= this.ttlMs) {
      this.keys.delete(hash)
      return undefined
    }
    return hit
  }

  set(hash: string, row: ApiKeyRow, user: UserRow | null, now: number): void {
    if (this.ttlMs <= 0) return
    if (this.keys.size >= this.max) this.keys.delete(this.keys.keys().next().value!)
    this.keys.set(hash, { row, user, at: now })
  }

  /** Called after any change to API keys, users, groups or the site's access limits. */
  clear(): void {
    this.keys.clear()
    for (const f of this.listeners) f()
  }

  /** `f` runs on every clear (other per-process memories of identities forget with this one). */
  onClear(f: () => void): void {
    this.listeners.push(f)
  }
}
