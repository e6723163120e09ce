/** When to try a failed notification again (decisions.md, Webhooks). */
export class RetryPolicy {
  constructor(
    /** Seconds before retry 1, 2, …; attempts in all = length + 1. */
    private readonly schedule: number[],
    private readonly random: () => number = Math.random,
  ) {}

  /** Attempts a notification gets: the schedule's (0), or the number an operator's request set. */
  maxAttempts(requested: number): number {
    return requested > 0 ? requested : this.schedule.length + 1
  }

  /**
   * Milliseconds to wait after failed attempt `attempt` (1-based): the scheduled delay plus up to
   * 20% positive jitter, so that listeners coming back are not hit by every retry at once. A
   * `Retry-After` (429/503) is honoured when longer, up to twice the scheduled delay.
   */
  delayMs(attempt: number, retryAfterSeconds: number | null): number {
    const scheduled = this.schedule[Math.min(attempt, this.schedule.length) - 1] ?? 0
    let delay = scheduled * (1 + 0.2 * this.random())
    if (retryAfterSeconds !== null && retryAfterSeconds > delay) {
      delay = Math.min(retryAfterSeconds, 2 * scheduled)
    }
    return Math.round(delay * 1000)
  }
}
