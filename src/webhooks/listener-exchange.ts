import type { WebhookOutcome } from './webhook-outcome.js'

/**
 * One exchange with a listener, as undici's dispatcher drives it: the response counted and kept
 * as it arrives, and how it ends (answered, failed, timed out).
 */

/** Bytes of the response body kept for the delivery log. */
export const RESPONSE_BODY_KEPT = 64 * 1024
/** Bytes of the response body read (and counted) before the connection is closed. */
export const RESPONSE_BODY_COUNTED = 1024 * 1024

/** What has arrived so far, so that a timeout still reports the part of the body it cut short. */
export interface Progress {
  status: number | null
  /** `Retry-After` and `Content-Length` as undici's header parsing gives them (repeats as an array). */
  retryAfter: string | string[] | undefined
  contentLength: string | string[] | undefined
  kept: Buffer[]
  keptBytes: number
  size: number
}

export const nothingYet = (): Progress => ({
  status: null,
  retryAfter: undefined,
  contentLength: undefined,
  kept: [],
  keptBytes: 0,
  size: 0,
})

/** How an exchange turns into an outcome (the sender's clock and timeouts). */
export interface Outcomes {
  answered(progress: Progress, started: number): WebhookOutcome
  failed(err: unknown, tls: boolean, progress: Progress, started: number): WebhookOutcome
  timedOut(progress: Progress, started: number): WebhookOutcome
}

export const keptText = (p: Progress) => (p.kept.length === 0 ? '' : Buffer.concat(p.kept).toString('utf8'))

/** The value of one response header as undici's parseHeaders gives it: a string, or an array when repeated. */
function addHeader(
  have: string | string[] | undefined,
  value: Buffer | string | string[],
): string | string[] {
  const text =
    typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : value.toString('latin1')
  if (have === undefined) return text
  return typeof have === 'string' ? [have, text] : [...have, text]
}

/**
 * One request to a listener as undici's dispatcher drives it (its handler interface). Settles
 * exactly once: with the response once it has been read (or its first 1 MiB), with the
 * network failure undici reports, or with a timeout when the total time runs out first.
 */
export class Exchange {
  readonly progress = nothingYet()
  timer: NodeJS.Timeout | undefined
  #abort: ((reason?: Error) => void) | null = null
  #settled = false
  #timedOut = false

  constructor(
    private readonly outcomes: Outcomes,
    private readonly tls: boolean,
    private readonly started: number,
    private readonly resolve: (outcome: WebhookOutcome) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  /** A request queued behind a connection being opened has no abort yet: it is aborted once it has one. */
  readonly timeout = (): void => {
    if (this.#settled) return
    this.#timedOut = true
    this.#settle(this.outcomes.timedOut(this.progress, this.started))
    this.#abort?.(new Error('webhook request timed out'))
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.#timedOut) abort(new Error('webhook request timed out'))
    else this.#abort = abort
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null, _resume: () => void): boolean {
    // 1xx interim responses are not the answer.
    if (statusCode < 200 || this.#settled) return true
    const p = this.progress
    p.status = statusCode
    // Only these two are read; the header buffers are undici's own and reused after this call.
    if (rawHeaders) {
      for (let i = 0; i < rawHeaders.length; i += 2) {
        const name = rawHeaders[i]!
        if (name.length !== 11 && name.length !== 14) continue
        const lower = name.toString('latin1').toLowerCase()
        if (lower === 'retry-after') p.retryAfter = addHeader(p.retryAfter, rawHeaders[i + 1]!)
        else if (lower === 'content-length') p.contentLength = addHeader(p.contentLength, rawHeaders[i + 1]!)
      }
    }
    return true
  }

  onData(chunk: Buffer): boolean {
    if (this.#settled) return true
    const p = this.progress
    p.size += chunk.length
    if (p.keptBytes < RESPONSE_BODY_KEPT) {
      // A copy: undici's buffer is reused, and a kept slice must not pin what it came from.
      const part = Buffer.from(chunk.subarray(0, RESPONSE_BODY_KEPT - p.keptBytes))
      p.kept.push(part)
      p.keptBytes += part.length
    }
    if (p.size >= RESPONSE_BODY_COUNTED) {
      // Enough: what is unread is not read, and undici closes the connection of an aborted request.
      const declared = Number(p.contentLength)
      if (Number.isSafeInteger(declared) && declared > p.size) p.size = declared
      this.#settle(this.outcomes.answered(p, this.started))
      this.#abort?.(new Error('webhook response body over the counted limit'))
      return false
    }
    return true
  }

  onComplete(): void {
    if (!this.#settled) this.#settle(this.outcomes.answered(this.progress, this.started))
  }

  onError(err: Error): void {
    if (this.#settled) return
    if ((err as { code?: unknown }).code === 'UND_ERR_INVALID_ARG') {
      this.#settled = true
      clearTimeout(this.timer)
      this.reject(err)
      return
    }
    this.#settle(this.outcomes.failed(err, this.tls, this.progress, this.started))
  }

  onUpgrade(): void {
    // Never asked for (no Upgrade header is sent); undici requires the method of a handler.
    this.onError(new Error('unexpected protocol upgrade'))
  }

  #settle(outcome: WebhookOutcome): void {
    this.#settled = true
    clearTimeout(this.timer)
    this.resolve(outcome)
  }
}

/** delta-seconds or an HTTP-date (RFC 9110 §10.2.3); anything else is ignored. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim()
  if (text === undefined || text === '') return null
  if (/^\d+$/.test(text)) return Number(text)
  // Date.parse accepts far more than HTTP-dates ("1.5" is a date to it); every HTTP-date form starts with the day.
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/.test(text)) return null
  const at = Date.parse(text)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000))
}
