import crypto from 'node:crypto'
import { xmlEscape } from './dav-xml.js'

/** A WebDAV write lock (exclusive; RFC 4918 §6). */
export interface DavLock {
  token: string
  /** The locked path as Wharf has it, and in lower case for comparisons (paths are case-insensitive). */
  path: string
  key: string
  depth: '0' | 'infinity'
  /** The client's `DAV:owner`, as XML, given back as it came. */
  owner: string
  /** Who took it (`u<user id>` or `k<key id>`): nobody else can use its token. */
  holder: string
  timeoutSeconds: number
  expiresAt: number
}

export const DEFAULT_LOCK_SECONDS = 600
export const MAX_LOCK_SECONDS = 3600

const within = (key: string, folder: string) => folder === '' || key.startsWith(`${folder}/`)

/**
 * The locks of this process, in memory. Locks are a WebDAV matter: they bind WebDAV clients only
 * (REST, SFTP and FTP writes do not see them), and each server process has its own table, so a
 * deployment of several processes needs sticky routing for WebDAV clients that lock
 * (docs/decisions.md, "WebDAV"). A restart drops every lock, which clients survive: a lost
 * lock's token is simply refused and they lock again.
 */
export class LockTable {
  private readonly locks = new Map<string, DavLock>()

  constructor(private readonly now: () => number) {}

  get(token: string): DavLock | undefined {
    this.sweep()
    return this.locks.get(token)
  }

  /** Locks that cover `path`: on it, or depth infinity on a folder above it. */
  covering(path: string): DavLock[] {
    this.sweep()
    const key = path.toLowerCase()
    return [...this.locks.values()].filter(
      (l) => l.key === key || (l.depth === 'infinity' && within(key, l.key)),
    )
  }

  /** Locks on anything strictly inside `path`. */
  inside(path: string): DavLock[] {
    this.sweep()
    const key = path.toLowerCase()
    return [...this.locks.values()].filter((l) => l.key !== key && within(l.key, key))
  }

  /** Locks exactly on `path` (a depth-0 lock on a folder guards its list of members). */
  on(path: string): DavLock[] {
    this.sweep()
    const key = path.toLowerCase()
    return [...this.locks.values()].filter((l) => l.key === key)
  }

  create(input: Omit<DavLock, 'token' | 'key' | 'expiresAt'>): DavLock {
    const lock: DavLock = {
      ...input,
      token: `opaquelocktoken:${crypto.randomUUID()}`,
      key: input.path.toLowerCase(),
      expiresAt: this.now() + input.timeoutSeconds * 1000,
    }
    this.locks.set(lock.token, lock)
    return lock
  }

  refresh(lock: DavLock, timeoutSeconds: number): DavLock {
    lock.timeoutSeconds = timeoutSeconds
    lock.expiresAt = this.now() + timeoutSeconds * 1000
    return lock
  }

  remove(token: string): void {
    this.locks.delete(token)
  }

  /** Drops the locks on `path` and inside it (it was deleted or moved away). */
  removeUnder(path: string): void {
    const key = path.toLowerCase()
    for (const l of this.locks.values()) if (l.key === key || within(l.key, key)) this.locks.delete(l.token)
  }

  private sweep(): void {
    const now = this.now()
    for (const l of this.locks.values()) if (l.expiresAt <= now) this.locks.delete(l.token)
  }
}

/** Seconds left, as the Timeout of a lock's discovery. */
export function secondsLeft(lock: DavLock, now: number): number {
  return Math.max(0, Math.ceil((lock.expiresAt - now) / 1000))
}

/** `DAV:activelock` (RFC 4918 §14.1). */
export function renderActiveLock(lock: DavLock, rootHref: string, now = Date.now()): string {
  return (
    '<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:exclusive/></D:lockscope>' +
    `<D:depth>${lock.depth === '0' ? '0' : 'infinity'}</D:depth>` +
    (lock.owner ? `<D:owner>${lock.owner}</D:owner>` : '') +
    `<D:timeout>Second-${secondsLeft(lock, now)}</D:timeout>` +
    `<D:locktoken><D:href>${xmlEscape(lock.token)}</D:href></D:locktoken>` +
    `<D:lockroot><D:href>${xmlEscape(rootHref)}</D:href></D:lockroot></D:activelock>`
  )
}

/** `Timeout: Second-600, Infinite` → the first the server accepts, capped (RFC 4918 §10.7). */
export function timeoutOf(header: string | undefined): number {
  if (!header) return DEFAULT_LOCK_SECONDS
  for (const part of header.split(',').map((s) => s.trim().toLowerCase())) {
    if (part === 'infinite') return MAX_LOCK_SECONDS
    const m = /^second-(\d{1,10})$/.exec(part)
    if (m) return Math.max(1, Math.min(MAX_LOCK_SECONDS, Number(m[1])))
  }
  return DEFAULT_LOCK_SECONDS
}
