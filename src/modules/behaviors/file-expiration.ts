import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Logger } from 'pino'
import { isWithin } from '../../api/paths.js'
import type { JobLease } from '../../jobs/job-lease.js'
import type { ActionContext } from '../actions/action-recorder.js'
import type { BehaviorRepository, BehaviorRow } from './behavior-repository.js'

const DAY = 86_400_000

/** Where a retention rule deletes, and what: the files (and folders) stored before `cutoff`. */
export interface ExpiryScope {
  siteId: number
  /** The rule's folder, in lower case ('' for the root). */
  folderLower: string
  /** Files of every folder inside it too (else only those directly in it). */
  recursive: boolean
  /** Folders inside it (lower case) whose own rule replaces this one there, and below them. */
  excluded: readonly string[]
  /** Files last stored (uploaded or replaced) before this time (epoch ms) are expired. */
  cutoff: number
}

/** The file core's side of a retention (files/file-expiry.ts): reading and deleting in batches. */
export interface RetentionDeletions {
  /** Up to `limit` expired files of the scope. */
  expiredFiles(scope: ExpiryScope, limit: number): Promise<{ id: number; path: string; path_lower: string }[]>
  /** Deletes those still expired, one transaction; returns how many went. */
  deleteFiles(
    scope: ExpiryScope,
    files: { id: number; path: string; path_lower: string }[],
    now: number,
  ): Promise<number>
  /** Deletes the scope's empty folders made before its cutoff; returns how many went. */
  deleteEmptyFolders(scope: ExpiryScope, limit: number, now: number, go: () => boolean): Promise<number>
}

/** Who the Actions of a retention name: no user (`user_id` null), the name "Wharf", as a robot. */
export const RETENTION_USERNAME = 'Wharf'

export function retentionActor(siteId: number): ActionContext {
  return { siteId, userId: null, username: RETENTION_USERNAME, ip: null, interface: 'robot' }
}

export interface FileExpirationOptions {
  /** Files deleted per transaction. */
  batchSize: number
  now: () => number
  logger?: Logger | undefined
}

export interface ExpirationReport {
  files: number
  folders: number
}

/**
 * The background job of file_expiration behaviors: every pass, each such behavior deletes the
 * files it applies to that were stored (uploaded or last replaced) more than `days_to_retain`
 * days ago, and with `delete_empty_folders` the empty folders inside its folder made that long
 * ago. What a behavior applies to is the rule of behavior-matching.ts, written as SQL: its folder's
 * files, every folder's inside it when `recursive`, less what lies at or below a folder whose own
 * file_expiration cancels it (`disable_parent_folder_behavior`). Where several apply, each deletes
 * what is past its own retention, so the shortest wins. Processes sharing the database take turns
 * with a lease: one pass at a time, and a process that dies mid-pass leaves the rest to the next.
 */
export class FileExpiration {
  private timer: NodeJS.Timeout | null = null
  private last: Promise<unknown> = Promise.resolve()
  private stopping = false

  constructor(
    private readonly behaviors: BehaviorRepository,
    private readonly expiry: RetentionDeletions,
    private readonly lease: JobLease | null,
    private readonly opts: FileExpirationOptions,
  ) {}

  /** One pass over every file_expiration behavior; zeros when another process holds the turn. */
  runOnce(): Promise<ExpirationReport> {
    const run = this.last
      .catch(() => undefined)
      .then(async () => {
        const pass = (held: () => boolean) => this.pass(held)
        return (this.lease ? await this.lease.hold(pass) : await pass(() => true)) ?? { files: 0, folders: 0 }
      })
    this.last = run
    return run
  }

  start(intervalMs: number): void {
    if (this.timer) return
    this.stopping = false
    const tick = () =>
      void this.runOnce().then(
        (r) =>
          (r.files > 0 || r.folders > 0) &&
          this.opts.logger?.info({ files: r.files, folders: r.folders }, 'files past retention deleted'),
        (err) => this.opts.logger?.error({ err }, 'file retention failed'),
      )
    tick()
    this.timer = setInterval(tick, intervalMs)
    this.timer.unref()
  }

  /** Stops the passes; one in progress ends after its current batch. */
  async stop(): Promise<void> {
    this.stopping = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.last.catch(() => undefined)
  }

  private async pass(held: () => boolean): Promise<ExpirationReport> {
    const go = () => held() && !this.stopping
    const report = { files: 0, folders: 0 }
    const rows = await this.behaviors.allOfType('file_expiration')
    for (const b of rows) {
      if (!go()) break
      const value = JSON.parse(b.value) as { days_to_retain: number; delete_empty_folders?: boolean }
      const scope = scopeOf(
        b,
        rows.filter((r) => r.site_id === b.site_id),
        this.opts.now() - value.days_to_retain * DAY,
      )
      report.files += await this.expireFiles(scope, go)
      if (value.delete_empty_folders === true && go()) {
        const folders = await this.expiry.deleteEmptyFolders(scope, this.opts.batchSize, this.opts.now(), go)
        report.folders += folders
      }
    }
    return report
  }

  private async expireFiles(scope: ExpiryScope, go: () => boolean): Promise<number> {
    let deleted = 0
    while (go()) {
      const batch = await this.expiry.expiredFiles(scope, this.opts.batchSize)
      if (batch.length === 0) break
      const n = await this.expiry.deleteFiles(scope, batch, this.opts.now())
      deleted += n
      // On SQLite every statement completes without waiting for I/O: without this turn of the
      // event loop, requests would wait for the whole pass.
      await nextTurn()
      // None went (each was replaced or moved meanwhile): the next read finds others or none.
      if (batch.length < this.opts.batchSize && n === batch.length) break
    }
    return deleted
  }
}

/**
 * What a behavior covers: its folder (and, when recursive, what is inside it) less the folders
 * inside it where another file_expiration cancels those above (they and what is below them).
 */
export function scopeOf(b: BehaviorRow, siteRows: readonly BehaviorRow[], cutoff: number): ExpiryScope {
  const excluded = b.recursive
    ? siteRows
        .filter(
          (r) =>
            r.disable_parent_folder_behavior === 1 &&
            r.path_lower !== b.path_lower &&
            isWithin(r.path_lower, b.path_lower),
        )
        .map((r) => r.path_lower)
    : []
  return {
    siteId: b.site_id,
    folderLower: b.path_lower,
    recursive: b.recursive === 1,
    excluded: [...new Set(excluded)],
    cutoff,
  }
}
