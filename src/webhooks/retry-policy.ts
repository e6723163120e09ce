/** When to try a failed notification again (decisions.md, Webhooks). */
export class RetryPolicy {
  /** The schedule's longest delay, in seconds: no Retry-After makes a retry wait longer. */
  private readonly longest: number

  constructor(
    /** Seconds before retry 1, 2, …; attempts in all = length + 1. */
    private readonly schedule: number[],
    private readonly random: () => number = Math.random,
  ) {
    this.longest = Math.max(0, ...schedule)
  }

  /** Attempts a notification gets: the schedule's (0), or the number an operator's request set. */
  maxAttempts(requested: number): number {
    return requested > 0 ? requested : this.schedule.length + 1
  }

  /**
   * Milliseconds to wait after failed attempt `attempt` (1-based): the scheduled delay plus up to
   * 20% positive jitter, so that listeners coming back are not hit by every retry at once. A
   * `Retry-After` (429/503) longer than the scheduled delay is honoured up to the schedule's
   * longest delay, jittered the same way (a listener that tells many senders to come back at one
   * instant gets them spread) but never past that longest delay; a shorter one leaves the
   * scheduled delay, so the wait always lies within the schedule's own bounds.
   */
  delayMs(attempt: number, retryAfterSeconds: number | null): number {
    const scheduled = this.schedule[Math.min(attempt, this.schedule.length) - 1] ?? 0
    const jitter = 1 + 0.2 * this.random()
    if (retryAfterSeconds === null || retryAfterSeconds <= scheduled)
      return Math.round(scheduled * jitter * 1000)
    return Math.round(Math.min(retryAfterSeconds * jitter, this.longest) * 1000)
  }
}
