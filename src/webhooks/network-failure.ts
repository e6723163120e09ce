import { AddressRefusedError } from './address-guard.js'

/**
 * Turns a failed webhook exchange into the curl exit code the delivery log records in `status`
 * (6 resolve, 7 connect, 28 timeout, 35 TLS, 52 empty reply, 56 receive) and a short message.
 */

/** The listener's host name could not be resolved (whatever the resolver threw, or no address). */
export class HostResolutionError extends Error {
  constructor(
    readonly hostname: string,
    cause?: unknown,
  ) {
    // The resolver's code (ENOTFOUND, EAI_AGAIN …) tells a name that does not exist from a DNS
    // server that did not answer; a resolver that found nothing at all says so.
    const why = cause === undefined ? 'no address' : codeOf(cause)
    super(`Could not resolve host ${hostname}${why ? ` (${why})` : ''}`, { cause })
    this.name = 'HostResolutionError'
  }
}

export interface FailureContext {
  /** The error ended the opening of a connection (resolution, TCP connect, TLS handshake). */
  connecting: boolean
  tls: boolean
  /** Response headers had arrived. */
  responded: boolean
  connectTimeoutMs: number
  totalTimeoutMs: number
}

/** Each with the address and port the socket tried, when the error carries them. */
const CONNECT_FAILURES: Record<string, (to: string | null) => string> = {
  ECONNREFUSED: (to) => (to ? `Connection refused by ${to}` : 'Connection refused'),
  EHOSTUNREACH: (to) => (to ? `No route to host ${to}` : 'No route to host'),
  ENETUNREACH: (to) => (to ? `Network is unreachable for ${to}` : 'Network is unreachable'),
  EHOSTDOWN: (to) => (to ? `Host ${to} is down` : 'Host is down'),
  ENETDOWN: (to) => `Network is down${to ? ` (connecting to ${to})` : ''}`,
  EADDRNOTAVAIL: (to) => `Cannot assign requested address${to ? ` (connecting to ${to})` : ''}`,
}

const RECEIVE_FAILURES: Record<string, string> = {
  ECONNRESET: 'connection reset by peer',
  EPIPE: 'connection closed by peer',
  UND_ERR_SOCKET: 'connection closed by peer',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'body shorter than its Content-Length',
}

export function describeNetworkFailure(
  err: unknown,
  ctx: FailureContext,
): { status: number; message: string } {
  if (err instanceof HostResolutionError) return { status: 6, message: err.message }
  if (err instanceof AddressRefusedError) return { status: 7, message: err.message }
  const code = codeOf(err)
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || (ctx.connecting && code === 'ETIMEDOUT'))
    return { status: 28, message: `Connect timed out after ${ctx.connectTimeoutMs} ms` }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT')
    return { status: 28, message: `Timed out after ${ctx.totalTimeoutMs} ms` }
  if (ctx.connecting) {
    const known = Object.hasOwn(CONNECT_FAILURES, code) ? CONNECT_FAILURES[code] : undefined
    if (known !== undefined) return { status: 7, message: known(peerOf(err)) }
    // Once TCP is up, whatever ends the opening of an https connection is the TLS handshake failing
    // (certificate refused, a listener that does not speak TLS, a reset during the handshake).
    if (ctx.tls) return { status: 35, message: `TLS handshake failed: ${messageOf(err)}` }
    return { status: 7, message: `Could not connect: ${messageOf(err)}` }
  }
  if (code === 'UND_ERR_DESTROYED' || code === 'UND_ERR_CLOSED')
    return { status: 7, message: 'The webhook sender was closed' }
  if (code.startsWith('HPE_') || code === 'UND_ERR_HEADERS_OVERFLOW')
    return { status: 56, message: `Invalid HTTP response: ${messageOf(err)}` }
  // curl's "empty reply": the listener closed (or reset) the connection before any response came back.
  if (!ctx.responded)
    return {
      status: 52,
      message: `Empty reply from server${code === 'ECONNRESET' ? ' (connection reset)' : ''}`,
    }
  return {
    status: 56,
    message: `Failure receiving the response: ${RECEIVE_FAILURES[code] ?? messageOf(err)}`,
  }
}

/** `127.0.0.1:9` or `[::1]:9`, from the address and port Node's socket errors carry. */
function peerOf(err: unknown): string | null {
  const { address, port } = (err ?? {}) as { address?: unknown; port?: unknown }
  if (typeof address !== 'string' || address === '') return null
  const host = address.includes(':') ? `[${address}]` : address
  return typeof port === 'number' ? `${host}:${port}` : host
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

/** One short line: OpenSSL's messages carry a whole error stack, its `reason` is the readable part. */
function messageOf(err: unknown): string {
  const reason = (err as { reason?: unknown } | null)?.reason
  if (typeof reason === 'string' && reason !== '') return reason
  const text = err instanceof Error ? err.message : String(err)
  return (text.split('\n')[0] ?? '').trim().slice(0, 200)
}
