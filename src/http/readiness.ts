/** One part of the server a readiness probe asks about: null when ready, else why not. */
export interface ReadinessPart {
  name: string
  check(): Promise<string | null> | string | null
}

export interface ReadinessReport {
  ready: boolean
  /** Each part: `ok`, or why it is not ready. */
  checks: Record<string, string>
}

/** How long one part may take to answer before it counts as not ready. */
const PART_TIMEOUT_MS = 2000

/**
 * What `GET /readyz` asks: the database, the blob store, the outboxes' workers and every enabled
 * front end (each says when it listens). Parts are asked at once, each within a time limit.
 */
export class Readiness {
  private readonly parts: ReadinessPart[] = []
  private readonly frontEnds = new Map<string, boolean>()

  add(part: ReadinessPart): this {
    this.parts.push(part)
    return this
  }

  /** A front end that must listen before the server is ready (`http`, `sftp`, `ftp`). */
  expectFrontEnd(name: string): this {
    if (!this.frontEnds.has(name)) this.frontEnds.set(name, false)
    return this
  }

  /** The front end listens (or, with false, no longer does: shutting down). */
  listening(name: string, up = true): void {
    this.frontEnds.set(name, up)
  }

  async report(): Promise<ReadinessReport> {
    const checks: Record<string, string> = {}
    const results = await Promise.all(
      this.parts.map(async (part) => {
        let timer: NodeJS.Timeout | undefined
        const late = new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve(`no answer within ${PART_TIMEOUT_MS} ms`), PART_TIMEOUT_MS)
        })
        try {
          return await Promise.race([Promise.resolve(part.check()), late])
        } catch (err) {
          return (err as Error).message || String(err)
        } finally {
          clearTimeout(timer)
        }
      }),
    )
    this.parts.forEach((part, i) => {
      checks[part.name] = results[i] ?? 'ok'
    })
    for (const [name, up] of this.frontEnds) checks[name] = up ? 'ok' : 'not listening'
    return { ready: Object.values(checks).every((c) => c === 'ok'), checks }
  }
}
