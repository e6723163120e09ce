/**
 * Bytes of WRITE data held in memory: from the moment a WRITE arrives until its bytes reach the
 * file's writer, or are dropped. ssh2 reopens a channel's window as soon as it has parsed a
 * packet, not when the packet's work is done, so without this count a client could keep sending
 * writes (ahead of a gap, or faster than the store takes them) until the server ran out of memory.
 * One count per user, shared by that user's connections in this process.
 */
export class WriteBudgets {
  private readonly byUser = new Map<string, number>()

  constructor(
    private readonly perConnection: number,
    private readonly perUser: number,
  ) {}

  /** The budget of one connection of `user`. */
  connection(user: string): WriteBudget {
    let used = 0
    return {
      take: (bytes) => {
        const forUser = this.byUser.get(user) ?? 0
        if (used + bytes > this.perConnection || forUser + bytes > this.perUser) return false
        used += bytes
        this.byUser.set(user, forUser + bytes)
        return true
      },
      give: (bytes) => {
        used -= bytes
        const left = (this.byUser.get(user) ?? 0) - bytes
        if (left > 0) this.byUser.set(user, left)
        else this.byUser.delete(user)
      },
    }
  }
}

export interface WriteBudget {
  /** Holds `bytes` more; false (and nothing held) when that would pass a bound. */
  take(bytes: number): boolean
  /** Lets go of bytes taken before. */
  give(bytes: number): void
}
