import dns from 'node:dns'
import { STATUS_CODES } from 'node:http'
import { createRequire } from 'node:module'
import net from 'node:net'
import type { Agent, buildConnector } from 'undici'
import { AddressGuard, AddressRefusedError, type Resolver } from './address-guard.js'
import { describeNetworkFailure, HostResolutionError } from './network-failure.js'

export interface WebhookRequest {
  url: string
  headers: Record<string, string>
  body: string
}

export interface WebhookOutcome {
  /** Status 200 or 204 only: anything else, redirects included, is a failure. */
  success: boolean
  /** The HTTP status, or a curl-style code when `network`: 6 resolve, 7 connect, 28 timeout, 35 TLS, 52 empty reply, 56 receive. */
  status: number
  /** Short text for people: "OK", "HTTP 500 Internal Server Error", "Connection refused"… */
  message: string
  network: boolean
  /** Bytes of the response body received, counted up to 1 MiB (or Content-Length when larger). */
  responseSize: number
  /** The first 64 KiB of the response body as UTF-8 text. */
  responseBody: string
  /** `Retry-After` of a 429 or 503 in seconds (0 for a date already past), otherwise null. */
  retryAfterSeconds: number | null
  durationMs: number
}

export interface SenderOptions {
  /** Ranges that are not globally routable but may be contacted anyway (e.g. 127.0.0.0/8). */
  allowedCidrs: string[]
  /** Name resolution + TCP connect + TLS handshake of a new connection. */
  connectTimeoutMs: number
  /** The whole exchange: connect, request, response headers and body. */
  totalTimeoutMs: number
  /** Open connections per listener origin. */
  maxConnections?: number
  /** Name → addresses; the system resolver (getaddrinfo) by default. */
  resolver?: Resolver
  /** Clock for `durationMs` and for Retry-After dates. */
  now?: () => number
}

/** Bytes of the response body kept for the delivery log. */
export const RESPONSE_BODY_KEPT = 64 * 1024
/** Bytes of the response body read (and counted) before the connection is closed. */
export const RESPONSE_BODY_COUNTED = 1024 * 1024

const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }))

/** What has arrived so far, so that a timeout still reports the part of the body it cut short. */
interface Progress {
  status: number | null
  /** `Retry-After` and `Content-Length` as undici's header parsing gives them (repeats as an array). */
  retryAfter: string | string[] | undefined
  contentLength: string | string[] | undefined
  kept: Buffer[]
  keptBytes: number
  size: number
}

const nothingYet = (): Progress => ({
  status: null,
  retryAfter: undefined,
  contentLength: undefined,
  kept: [],
  keptBytes: 0,
  size: 0,
})

/** Where a listener URL sends requests, parsed once per URL. */
interface Target {
  origin: string
  path: string
  tls: boolean
}

interface Outcomes {
  answered(progress: Progress, started: number): WebhookOutcome
  failed(err: unknown, tls: boolean, progress: Progress, started: number): WebhookOutcome
  timedOut(progress: Progress, started: number): WebhookOutcome
}

// undici is loaded with the first webhook a site sends: a server that sends none never pays its
// ~6 MiB of memory.
const loadUndici = () => createRequire(import.meta.url)('undici') as typeof import('undici')

type LookupCallback = (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void

/**
 * Sends webhook requests to listeners and says how each one went, never throwing for a network
 * or HTTP failure. The host name is resolved once per new connection, every address is vetted by
 * the AddressGuard, and the socket connects to the vetted address itself (there is no second
 * lookup a DNS rebinding could answer differently). Connections are kept alive and pooled per
 * listener origin; redirects are never followed.
 */
export class WebhookSender {
  readonly #guard: AddressGuard
  readonly #resolver: Resolver
  readonly #now: () => number
  readonly #connectTimeoutMs: number
  readonly #totalTimeoutMs: number
  readonly #maxConnections: number
  #agent: Agent | undefined
  /** Errors raised while a connection was being opened, told apart from errors on an open one. */
  readonly #connectErrors = new WeakSet<object>()
  /** The last listener URL sent to, parsed (a site has one listener). */
  #lastUrl = ''
  #lastTarget: Target | null = null
  /** How an exchange turns into an outcome, for the undici handler of each request. */
  readonly #outcomes: Outcomes = {
    answered: (progress, started) => this.#answered(progress, started),
    failed: (err, tls, progress, started) => this.#failed(err, tls, progress, started),
    timedOut: (progress, started) => this.#timedOut(progress, started),
  }

  constructor(opts: SenderOptions) {
    this.#guard = new AddressGuard(opts.allowedCidrs)
    this.#resolver = opts.resolver ?? systemResolver
    this.#now = opts.now ?? Date.now
    this.#connectTimeoutMs = opts.connectTimeoutMs
    this.#totalTimeoutMs = opts.totalTimeoutMs
    this.#maxConnections = opts.maxConnections ?? 64
  }

  /** The connection pool, made on first use. */
  #pool(): Agent {
    if (this.#agent) return this.#agent
    const { Agent, buildConnector } = loadUndici()
    // net.connect (and tls.connect) call `lookup` within the connect timeout, so it covers resolution
    // too. undici checks that timer about once a second, which is precise enough for seconds.
    const connector = buildConnector({ timeout: this.#connectTimeoutMs, lookup: this.#lookup })
    this.#agent = new Agent({
      connect: this.#guardedConnector(connector),
      connections: this.#maxConnections,
      pipelining: 1,
      // Our own timer ends the exchange; these only keep undici's defaults from outliving it.
      headersTimeout: this.#totalTimeoutMs,
      bodyTimeout: this.#totalTimeoutMs,
    })
    return this.#agent
  }

  /**
   * POSTs one request and reports the outcome. Rejects only for a caller's mistake undici refuses
   * before sending, such as a Transfer-Encoding header or a CR/LF in a header value.
   */
  send(req: WebhookRequest): Promise<WebhookOutcome> {
    const started = this.#now()
    const target = this.#target(req.url)
    if (typeof target === 'string')
      return Promise.resolve(this.#networkOutcome(7, target, nothingYet(), started))
    return new Promise((resolve, reject) => {
      // undici's dispatch with a handler of our own: the response is counted as it arrives, with
      // no stream, promise or abort signal of its own per request.
      const exchange = new Exchange(this.#outcomes, target.tls, started, resolve, reject)
      exchange.timer = setTimeout(exchange.timeout, this.#totalTimeoutMs)
      this.#pool().dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers: req.headers, body: req.body },
        exchange,
      )
    })
  }

  /** Waits for deliveries in flight, then closes every connection. */
  async close(): Promise<void> {
    await this.#agent?.close()
  }

  /** The origin and path of a listener URL, or why it is refused (status 7, nothing is contacted). */
  #target(url: string): Target | string {
    if (url === this.#lastUrl && this.#lastTarget !== null) return this.#lastTarget
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return 'Invalid URL'
    }
    // Anything but http(s) is refused like a disallowed address.
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      return `Protocol ${parsed.protocol} is not allowed`
    const target = {
      origin: parsed.origin,
      path: parsed.pathname + parsed.search,
      tls: parsed.protocol === 'https:',
    }
    this.#lastUrl = url
    this.#lastTarget = target
    return target
  }

  /** The outcome of an exchange that ended with an error from undici. */
  #failed(err: unknown, tls: boolean, progress: Progress, started: number): WebhookOutcome {
    const { status, message } = describeNetworkFailure(err, {
      connecting: err instanceof Object && this.#connectErrors.has(err),
      tls,
      responded: progress.status !== null,
      connectTimeoutMs: this.#connectTimeoutMs,
      totalTimeoutMs: this.#totalTimeoutMs,
    })
    return this.#networkOutcome(status, message, progress, started)
  }

  /** The outcome of an exchange that ran out of time. */
  #timedOut(progress: Progress, started: number): WebhookOutcome {
    return this.#networkOutcome(28, `Timed out after ${this.#totalTimeoutMs} ms`, progress, started)
  }

  /** The outcome of an exchange that got its response (whole, or its first 1 MiB). */
  #answered(progress: Progress, started: number): WebhookOutcome {
    const status = progress.status ?? 0
    const success = status === 200 || status === 204
    const reason = STATUS_CODES[status]
    return {
      success,
      status,
      message: success ? (reason ?? 'OK') : `HTTP ${status}${reason ? ` ${reason}` : ''}`,
      network: false,
      responseSize: progress.size,
      responseBody: keptText(progress),
      retryAfterSeconds:
        status === 429 || status === 503 ? parseRetryAfter(progress.retryAfter, this.#now()) : null,
      durationMs: this.#now() - started,
    }
  }

  #networkOutcome(status: number, message: string, progress: Progress, started: number): WebhookOutcome {
    return {
      success: false,
      status,
      message,
      network: true,
      responseSize: progress.size,
      responseBody: keptText(progress),
      retryAfterSeconds: null,
      durationMs: this.#now() - started,
    }
  }

  /** The `lookup` of every new socket: resolve, vet, and hand the socket the first allowed address only. */
  readonly #lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    this.#vettedAddress(hostname).then(
      (found) => (options.all ? callback(null, [found]) : callback(null, found.address, found.family)),
      (err: Error) => callback(err, ''),
    )
  }

  async #vettedAddress(hostname: string): Promise<dns.LookupAddress> {
    let found: { address: string; family: 4 | 6 }[]
    try {
      found = await this.#resolver(hostname)
    } catch (err) {
      throw new HostResolutionError(hostname, err)
    }
    const first = found[0]
    if (first === undefined) throw new HostResolutionError(hostname)
    const allowed = found.find((a) => this.#guard.allows(a.address))
    if (allowed === undefined) throw new AddressRefusedError(first.address)
    return allowed
  }

  /**
   * IP literals never reach `lookup`, so they are vetted here; the socket's peer is checked once
   * more after connecting, so that no future path to a socket can skip the guard.
   */
  #guardedConnector(connect: buildConnector.connector): buildConnector.connector {
    return (options, callback) => {
      const fail = (err: Error) => {
        this.#connectErrors.add(err)
        callback(err, null)
      }
      if (net.isIP(options.hostname) !== 0 && !this.#guard.allows(options.hostname))
        return fail(new AddressRefusedError(options.hostname))
      connect(options, (err, socket) => {
        if (err !== null) return fail(err)
        const peer = socket.remoteAddress
        if (peer !== undefined && this.#guard.allows(peer)) return callback(null, socket)
        socket.destroy()
        fail(new AddressRefusedError(peer ?? options.hostname))
      })
    }
  }
}

const keptText = (p: Progress) => (p.kept.length === 0 ? '' : Buffer.concat(p.kept).toString('utf8'))

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
class Exchange {
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
