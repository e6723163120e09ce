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
  headers: Record<string, string | string[] | undefined>
  kept: Buffer[]
  keptBytes: number
  size: number
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
  async send(req: WebhookRequest): Promise<WebhookOutcome> {
    const started = this.#now()
    const progress: Progress = { status: null, headers: {}, kept: [], keptBytes: 0, size: 0 }
    let url: URL
    try {
      url = new URL(req.url)
    } catch {
      return this.#networkOutcome(7, 'Invalid URL', progress, started)
    }
    // Anything but http(s) is refused like a disallowed address: status 7, nothing is contacted.
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return this.#networkOutcome(7, `Protocol ${url.protocol} is not allowed`, progress, started)

    const controller = new AbortController()
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.#totalTimeoutMs)
    })
    const exchange = this.#exchange(url, req, controller.signal, progress)
    exchange.catch(() => {}) // still settles (and is ignored) after a timeout
    try {
      // A request queued behind a connection being opened only sees its abort once that connect ends,
      // so the timer races the exchange rather than relying on the abort alone.
      if ((await Promise.race([exchange, timedOut])) === 'timeout') {
        controller.abort()
        return this.#networkOutcome(28, `Timed out after ${this.#totalTimeoutMs} ms`, progress, started)
      }
      return this.#httpOutcome(progress, started)
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code === 'UND_ERR_INVALID_ARG') throw err
      const { status, message } = describeNetworkFailure(err, {
        connecting: err instanceof Object && this.#connectErrors.has(err),
        tls: url.protocol === 'https:',
        responded: progress.status !== null,
        connectTimeoutMs: this.#connectTimeoutMs,
        totalTimeoutMs: this.#totalTimeoutMs,
      })
      return this.#networkOutcome(status, message, progress, started)
    } finally {
      clearTimeout(timer)
    }
  }

  /** Waits for deliveries in flight, then closes every connection. */
  async close(): Promise<void> {
    await this.#agent?.close()
  }

  async #exchange(url: URL, req: WebhookRequest, signal: AbortSignal, progress: Progress): Promise<'done'> {
    const res = await this.#pool().request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      headers: req.headers,
      body: req.body,
      signal,
    })
    progress.status = res.statusCode
    progress.headers = res.headers
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      progress.size += chunk.length
      if (progress.keptBytes < RESPONSE_BODY_KEPT) {
        // A copy, so that a kept slice does not pin the whole chunk it came from.
        const part = Buffer.from(chunk.subarray(0, RESPONSE_BODY_KEPT - progress.keptBytes))
        progress.kept.push(part)
        progress.keptBytes += part.length
      }
      if (progress.size >= RESPONSE_BODY_COUNTED) {
        // Leaving the loop destroys the body, and undici closes a connection whose response is unread.
        const declared = Number(res.headers['content-length'])
        if (Number.isSafeInteger(declared) && declared > progress.size) progress.size = declared
        break
      }
    }
    return 'done'
  }

  #httpOutcome(progress: Progress, started: number): WebhookOutcome {
    const status = progress.status ?? 0
    const success = status === 200 || status === 204
    const reason = STATUS_CODES[status]
    return {
      success,
      status,
      message: success ? (reason ?? 'OK') : `HTTP ${status}${reason ? ` ${reason}` : ''}`,
      network: false,
      responseSize: progress.size,
      responseBody: Buffer.concat(progress.kept).toString('utf8'),
      retryAfterSeconds:
        status === 429 || status === 503
          ? parseRetryAfter(progress.headers['retry-after'], this.#now())
          : null,
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
      responseBody: Buffer.concat(progress.kept).toString('utf8'),
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
