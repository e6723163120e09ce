import type net from 'node:net'
import type { SFTPWrapper } from 'ssh2'
import { ERRORS } from '../api/error-factories.js'

/**
 * The most one READ answers: OpenSSH's sftp-server's own cap (256 KiB less 1 KiB), so a DATA reply
 * fits the 256 KiB packets OpenSSH's client takes. A longer READ gets a short read, which the
 * protocol allows and every client handles by asking for the rest.
 */
export const MAX_READ_BYTES = 256 * 1024 - 1024
/** File bytes a channel may have read and not yet handed to the SSH connection. */
export const READ_AHEAD_BYTES = 2 * 1024 * 1024
/** Reads a channel keeps waiting for a client that does not take its data; past them, FAILURE. */
export const MAX_WAITING_READS = 1024
/** Bytes the connection's socket may hold unsent before reads wait for it to drain. */
const SOCKET_HIGH_WATER_BYTES = 1024 * 1024
/**
 * Bytes of replies ssh2 may hold beyond the client's window before reads wait: some, so that a
 * reopened window is filled at once rather than after the next file read.
 */
const QUEUED_HIGH_WATER_BYTES = 1024 * 1024

/**
 * The parts of ssh2's (1.x) SFTP object that say whether the client's window is full. ssh2 keeps
 * a reply that does not fit the window in memory, without limit, and tells its caller nothing
 * (`data()` returns nothing, no 'drain'): reading a file faster than the client takes it would
 * pile the file up in memory. If a later ssh2 lacks these, reads wait only for the socket (and
 * the back-pressure test fails).
 */
interface SftpInternals {
  _waitWindow?: boolean
  _buffer?: Buffer[]
  _chunkcb?: (() => void) | undefined
}

/**
 * Lets a channel's READs go ahead only while the client takes what it asked for: while what
 * waits for its SSH window stays under 1 MiB, the socket is not backed up, and the reads under
 * way stay within READ_AHEAD_BYTES. Reads are let through in the order they came.
 */
export class ReadGate {
  private reserved = 0
  private readonly waiting: { bytes: number; go: () => void }[] = []
  private watchingSocket = false
  private readonly internals: SftpInternals | null

  constructor(
    sftp: SFTPWrapper,
    private readonly socket: net.Socket | undefined,
  ) {
    const s = sftp as unknown as SftpInternals
    this.internals = typeof s._waitWindow === 'boolean' && Array.isArray(s._buffer) ? s : null
    if (this.internals) this.hookWindow(this.internals)
  }

  /** Resolves when a read of `bytes` may start; `done(bytes)` must follow once its data is sent. */
  admit(bytes: number): Promise<void> {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      this.reserved += bytes
      return Promise.resolve()
    }
    if (this.waiting.length >= MAX_WAITING_READS) {
      return Promise.reject(
        ERRORS.tooManyConcurrentRequests(
          'Too many reads waiting: take the data already asked for before asking for more',
        ),
      )
    }
    return new Promise((go) => {
      this.waiting.push({ bytes, go })
      this.watchSocket()
    })
  }

  /** A read's data went to the SSH connection, or the read failed. */
  done(bytes: number): void {
    this.reserved -= bytes
    this.pump()
  }

  private fits(bytes: number): boolean {
    if (this.windowFull() || (this.socket?.writableLength ?? 0) >= SOCKET_HIGH_WATER_BYTES) return false
    return this.reserved === 0 || this.reserved + bytes <= READ_AHEAD_BYTES
  }

  /** The replies ssh2 holds for a full window reach QUEUED_HIGH_WATER_BYTES. */
  private windowFull(): boolean {
    const queue = this.internals?._buffer
    if (!queue) return false
    let queued = 0
    for (const b of queue) queued += b.length
    return queued >= QUEUED_HIGH_WATER_BYTES
  }

  private pump(): void {
    for (let next = this.waiting[0]; next && this.fits(next.bytes); next = this.waiting[0]) {
      this.waiting.shift()
      this.reserved += next.bytes
      next.go()
    }
    if (this.waiting.length > 0) this.watchSocket()
  }

  private watchSocket(): void {
    const socket = this.socket
    if (!socket || this.watchingSocket || socket.writableLength < SOCKET_HIGH_WATER_BYTES) return
    this.watchingSocket = true
    socket.once('drain', () => {
      this.watchingSocket = false
      this.pump()
    })
  }

  /**
   * ssh2 calls `_chunkcb` when the client opens its window again (and sets it anew whenever the
   * window fills): an accessor keeps ssh2's callback and runs the waiting reads after it.
   */
  private hookWindow(s: SftpInternals): void {
    let callback = s._chunkcb
    const wrapped = () => {
      callback?.call(s)
      this.pump()
    }
    Object.defineProperty(s, '_chunkcb', {
      configurable: true,
      enumerable: true,
      get: () => (callback === undefined ? undefined : wrapped),
      set: (v: (() => void) | undefined) => {
        callback = v
      },
    })
  }
}
