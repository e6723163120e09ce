/**
 * Open sessions of the transfer protocols counted by a key (an address, a user), so that each
 * server can cap them. Every process counts its own.
 */
export class SessionCounter<K> {
  private readonly counts = new Map<K, number>()

  count(key: K): number {
    return this.counts.get(key) ?? 0
  }

  /** Counts one more session of `key`; the function returned uncounts it, once however often it is called. */
  add(key: K): () => void {
    this.counts.set(key, this.count(key) + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      const n = this.count(key) - 1
      if (n <= 0) this.counts.delete(key)
      else this.counts.set(key, n)
    }
  }

  /** Counts one more session unless `key` already has `max`: the release, or null when refused. */
  claim(key: K, max: number): (() => void) | null {
    return this.count(key) >= max ? null : this.add(key)
  }
}
