import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import os from 'node:os'
import { type Kysely, type Selectable, sql, type UpdateObject } from 'kysely'
import type { Logger } from 'pino'
import type { BlobStore } from '../blobs/blob-store.js'
import type { Database, ExportsTable } from '../db/schema.js'
import type { ExportBuilder } from './export-builder.js'
import { ExportFailure, type ExportJob } from './export-kind.js'

type ExportRow = Selectable<ExportsTable>

/** Creation of an export wakes the workers of this process at once (others find it by polling). */
export const exportSignal = new EventEmitter()
exportSignal.setMaxListeners(0)

/** A build that crashed its process this many times is not tried again: it fails. */
export const MAX_ATTEMPTS = 5

export interface ExportWorkerOptions {
  /** Builds running at once in this process. */
  concurrency: number
  /** How long a claim lasts unless renewed; renewed every third of it while the build runs. */
  leaseMs: number
  /** Longest wait between looks for work (builds of other processes, expired claims). */
  pollMs?: number
  /** SQLite: one process owns the file, so claims left by a crash are void at start. */
  releaseClaimsOnStart?: boolean
  skipLocked: boolean
  logger?: Logger | undefined
}

/** Stopping the worker: the claim is handed back so the next process starts the build at once. */
class Stopping extends Error {}
/** The claim was lost (lease expired and taken, or the export deleted): someone else decides. */
class ClaimLost extends Error {}

/**
 * Runs export builds. The export row is the job: a worker claims `building` rows with a lease
 * (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so several processes share the work and never build
 * the same export at once), renews the lease while the build runs, and stores the outcome only
 * while it still holds the claim. A process that dies mid-build leaves its claim to expire; the
 * next worker to claim the export builds it again from the start.
 */
export class ExportWorker {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`
  private readonly running = new Map<number, { done: Promise<void>; abort: AbortController }>()
  private readonly pollMs: number
  private stopped = true
  private pumping: Promise<void> | null = null
  private again = false
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly db: Kysely<Database>,
    private readonly builder: Pick<ExportBuilder, 'build'>,
    private readonly blobs: BlobStore,
    private readonly now: () => number,
    private readonly opts: ExportWorkerOptions,
  ) {
    this.pollMs = opts.pollMs ?? 2000
  }

  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.opts.releaseClaimsOnStart) {
      await this.db
        .updateTable('exports')
        .set({ lease_owner: null, lease_until: null })
        .where('status', '=', 'building')
        .where('lease_owner', 'is not', null)
        .execute()
    }
    exportSignal.on('created', this.kick)
    this.kick()
  }

  /** Stops claiming; builds in progress stop at their next page and hand their claim back. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    exportSignal.off('created', this.kick)
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.pumping
    for (const r of this.running.values()) r.abort.abort(new Stopping('the server is stopping'))
    await Promise.allSettled([...this.running.values()].map((r) => r.done))
  }

  /** Look for work now. */
  readonly kick = (): void => {
    if (this.stopped) return
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = null
      if (this.again) this.kick()
    })
  }

  /** Resolves once no build is running in this process (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.pumping) {
      await Promise.allSettled([this.pumping, ...[...this.running.values()].map((r) => r.done)])
    }
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.again = false
        const free = this.opts.concurrency - this.running.size
        if (free <= 0) break
        for (const row of await this.claim(free)) this.launch(row)
      } while (this.again && !this.stopped)
    } catch (err) {
      this.opts.logger?.error({ err }, 'export worker could not claim work')
    }
    if (!this.stopped) {
      if (this.timer) clearTimeout(this.timer)
      this.timer = setTimeout(this.kick, this.pollMs)
      this.timer.unref()
    }
  }

  private async claim(limit: number): Promise<ExportRow[]> {
    const now = this.now()
    let due = this.db
      .selectFrom('exports')
      .select('id')
      .where('status', '=', 'building')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .orderBy('id')
      .limit(limit)
    if (this.opts.skipLocked) due = due.forUpdate().skipLocked()
    return this.db
      .updateTable('exports')
      .set({
        lease_owner: this.owner,
        lease_until: now + this.opts.leaseMs,
        attempts: sql`attempts + 1`,
        updated_at: now,
      })
      .where('id', 'in', due)
      .where('status', '=', 'building')
      .returningAll()
      .execute()
  }

  private launch(row: ExportRow): void {
    const abort = new AbortController()
    const renew = setInterval(() => void this.renew(row.id, abort), Math.max(50, this.opts.leaseMs / 3))
    renew.unref()
    const done = this.run(row, abort.signal)
      .catch((err) => this.opts.logger?.error({ err, export: row.id }, 'export build could not be recorded'))
      .finally(() => {
        clearInterval(renew)
        this.running.delete(row.id)
        // A slot came free: there may be more to build.
        this.kick()
      })
    this.running.set(row.id, { done, abort })
  }

  private async renew(id: number, abort: AbortController): Promise<void> {
    if (abort.signal.aborted) return
    try {
      const now = this.now()
      const res = await this.mine(id, { lease_until: now + this.opts.leaseMs })
      if (Number(res.numUpdatedRows) === 0) abort.abort(new ClaimLost())
    } catch (err) {
      // The next renewal tries again; the lease is long enough to miss one.
      this.opts.logger?.warn({ err, export: id }, 'export lease could not be renewed')
    }
  }

  /** Updates the export only while this worker still holds its claim. */
  private mine(id: number, set: UpdateObject<Database, 'exports'>) {
    return this.db
      .updateTable('exports')
      .set(set)
      .where('id', '=', id)
      .where('status', '=', 'building')
      .where('lease_owner', '=', this.owner)
      .executeTakeFirst()
  }

  private async run(row: ExportRow, signal: AbortSignal): Promise<void> {
    if (row.attempts > MAX_ATTEMPTS) {
      await this.fail(row.id, `The export was started ${MAX_ATTEMPTS} times and never finished`)
      return
    }
    const job: ExportJob = {
      id: row.id,
      site_id: row.site_id,
      kind: row.kind,
      query: JSON.parse(row.query) as Record<string, unknown>,
      start_at: row.start_at,
      end_at: row.end_at,
    }
    let built: Awaited<ReturnType<ExportBuilder['build']>>
    try {
      built = await this.builder.build(job, signal)
    } catch (err) {
      const why = signal.aborted ? signal.reason : err
      if (why instanceof ClaimLost) return
      if (why instanceof Stopping) {
        // A graceful stop is not a failed attempt: it does not count towards MAX_ATTEMPTS.
        await this.mine(row.id, { lease_owner: null, lease_until: null, attempts: sql<number>`attempts - 1` })
        return
      }
      if (err instanceof ExportFailure) {
        await this.fail(row.id, err.message)
        return
      }
      const instance = crypto.randomUUID()
      this.opts.logger?.error({ err, export: row.id, instance }, 'export build failed')
      await this.fail(row.id, `The export could not be built (error ${instance} in the server log)`)
      return
    }
    const res = await this.mine(row.id, {
      status: 'ready',
      blob_key: built.blobKey,
      result_bytes: built.bytes,
      result_count: built.count,
      lease_owner: null,
      lease_until: null,
      updated_at: this.now(),
    })
    // Deleted, or taken over after a lease ran out: this copy of the results belongs to no one.
    if (Number(res.numUpdatedRows) === 0) await this.blobs.delete(built.blobKey)
  }

  private async fail(id: number, reason: string): Promise<void> {
    await this.mine(id, {
      status: 'failed',
      failure_reason: reason,
      lease_owner: null,
      lease_until: null,
      updated_at: this.now(),
    })
  }
}
