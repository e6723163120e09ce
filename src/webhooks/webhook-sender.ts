import dns from 'node:dns'
import { STATUS_CODES } from 'node:http'
import { createRequire } from 'node:module'
import net from 'node:net'
import type { Agent, buildConnector } from 'undici'
import { AddressGuard, AddressRefusedError, type Resolver } from './address-guard.js'
import {
  Exchange,
  keptText,
  nothingYet,
  type Outcomes,
  type Progress,
  parseRetryAfter,
  RESPONSE_BODY_COUNTED,
  RESPONSE_BODY_KEPT,
} from './listener-exchange.js'
import { describeNetworkFailure, HostResolutionError } from './network-failure.js'
import type { WebhookOutcome } from './webhook-outcome.js'

export { parseRetryAfter, RESPONSE_BODY_COUNTED, RESPONSE_BODY_KEPT, type WebhookOutcome }

export interface WebhookRequest {
  url: string
  /** POST unless said; a GET has no body. */
  method?: 'POST' | 'GET'
  headers: Record<string, string>
  body?: string | undefined
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

const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }))

/** Where a listener URL sends requests, parsed once per URL. */
interface Target {
  origin: string
  path: string
  tls: boolean
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
   * Sends one request (POST unless said) and reports the outcome. Rejects only for a caller's mistake undici refuses
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
        {
          origin: target.origin,
          path: target.path,
          method: req.method ?? 'POST',
          headers: req.headers,
          body: req.body ?? null,
        },
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
