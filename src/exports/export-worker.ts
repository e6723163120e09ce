import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import { type Kysely, type Selectable, sql, type UpdateObject } from 'kysely'
import type { Logger } from 'pino'
import { queueNewBlob, requeueBlobs, unqueueBlobs } from '../blobs/blob-garbage.js'
import type { BlobStore } from '../blobs/blob-store.js'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database, ExportsTable } from '../db/schema.js'
import { type ClaimShape, LeasedJobs } from '../jobs/leased-jobs.js'
import { LeasedWorker, Stopping } from '../jobs/leased-worker.js'
import { metrics } from '../metrics/metrics.js'
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
  logger?: Logger | undefined
}

const BUILDING = sql<boolean>`status = 'building'`

/** The oldest exports still to build; each claim counts as an attempt. */
const CLAIM: ClaimShape = {
  key: 'building',
  due: () => BUILDING,
  orderBy: 'id',
  set: (p) => sql`attempts = attempts + 1, updated_at = ${p('now')}`,
  recheck: BUILDING,
  returning: ['*'],
}

/** The claim was lost (lease expired and taken, or the export deleted): someone else decides. */
class ClaimLost extends Error {}

/** The janitor collected the export's file (its queue row was gone) before it could be recorded. */
class Collected extends Error {}

/**
 * The janitor deletes a queued blob an hour after its row was written: a build touches its row
 * this often (at a lease renewal), so a long build's file is never collected under it.
 */
const TOUCH_EVERY_MS = 5 * 60_000

/** The deletion-queue row of the file a build is writing. */
interface QueuedFile {
  garbageId: number
  touched: number
}

/**
 * Runs export builds. The export row is the job: a worker claims `building` rows with a lease
 * (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so several processes share the work and never build
 * the same export at once), renews the lease while the build runs, and stores the outcome only
 * while it still holds the claim. A process that dies mid-build leaves its claim to expire; the
 * next worker to claim the export builds it again from the start.
 *
 * The CSV file's key is queued for deletion (committed) before the build writes a byte, and
 * taken off the queue in the transaction that records the export ready: a build that fails, is
 * stopped, loses its claim, or whose process dies (right after the store wrote the file included)
 * leaves a queued key that the janitor deletes, never a file nothing names.
 */
export class ExportWorker extends LeasedWorker<ExportRow> {
  private readonly jobs: LeasedJobs<'exports'>
  /** The queue row of each build running here, by export id. */
  private readonly queued = new Map<number, QueuedFile>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly builder: Pick<ExportBuilder, 'build'>,
    private readonly blobs: BlobStore,
    private readonly now: () => number,
    private readonly opts: ExportWorkerOptions,
  ) {
    super(
      { ...opts, pollMs: opts.pollMs ?? 2000 },
      { emitter: exportSignal, event: 'created' },
      'export worker',
    )
    // Only a build still in progress is ever changed by the worker that holds it.
    this.jobs = new LeasedJobs(db, dialectOf(db), 'exports', { leaseMs: opts.leaseMs, now, held: BUILDING })
  }

  get owner(): string {
    return this.jobs.owner
  }

  protected override claim(free: number): Promise<ExportRow[]> {
    return this.jobs.claim<ExportRow>(CLAIM, free)
  }

  protected override async releaseLeftOver(): Promise<void> {
    await this.jobs.releaseLeftOver(BUILDING)
  }

  protected override failed(err: unknown, row: ExportRow): void {
    this.opts.logger?.error({ err, export: row.id }, 'export build could not be recorded')
  }

  protected override async renew(row: ExportRow, abort: AbortController): Promise<void> {
    if (abort.signal.aborted) return
    try {
      if (!(await this.jobs.renew(row.id))) abort.abort(new ClaimLost())
      else await this.touch(row.id)
    } catch (err) {
      // The next renewal tries again; the lease is long enough to miss one.
      this.opts.logger?.warn({ err, export: row.id }, 'export lease could not be renewed')
    }
  }

  /** Restarts the janitor's hour for the file of a long build (a row already gone: see record). */
  private async touch(id: number): Promise<void> {
    const file = this.queued.get(id)
    const now = this.now()
    if (!file || now - file.touched < TOUCH_EVERY_MS) return
    await requeueBlobs(this.db, [file.garbageId], now)
    file.touched = now
  }

  /** Updates the export only while this worker still holds its claim. */
  private mine(id: number, set: UpdateObject<Database, 'exports'>): Promise<boolean> {
    return this.jobs.update(id, set)
  }

  protected override async run(row: ExportRow, signal: AbortSignal): Promise<void> {
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
    const key = this.blobs.newKey()
    const garbageId = await queueNewBlob(this.db, key, this.now())
    this.queued.set(row.id, { garbageId, touched: this.now() })
    try {
      await this.buildAndRecord(row, job, key, garbageId, signal)
    } finally {
      this.queued.delete(row.id)
    }
  }

  /** Builds the export's file as the blob `key`, queued as `garbageId`, and records the outcome. */
  private async buildAndRecord(
    row: ExportRow,
    job: ExportJob,
    key: string,
    garbageId: number,
    signal: AbortSignal,
  ): Promise<void> {
    // Whatever goes wrong from here, the key stays queued: the janitor deletes the file, if any.
    let built: Awaited<ReturnType<ExportBuilder['build']>>
    try {
      built = await this.builder.build(job, signal, key)
    } catch (err) {
      const why = signal.aborted ? signal.reason : err
      if (why instanceof ClaimLost) return
      if (why instanceof Stopping) {
        // A graceful stop is not a failed attempt: it does not count towards MAX_ATTEMPTS.
        await this.jobs.release(row.id, { attempts: sql<number>`attempts - 1` })
        return
      }
      metrics.exportBuilds.inc({ kind: row.kind, result: 'failed' })
      if (err instanceof ExportFailure) {
        await this.fail(row.id, err.message)
        return
      }
      const instance = crypto.randomUUID()
      this.opts.logger?.error({ err, export: row.id, instance }, 'export build failed')
      await this.fail(row.id, `The export could not be built (error ${instance} in the server log)`)
      return
    }
    let recorded: boolean
    try {
      recorded = await this.db.transaction().execute(async (trx) => {
        const ready = {
          status: 'ready' as const,
          blob_key: built.blobKey,
          result_bytes: built.bytes,
          result_count: built.count,
          lease_owner: null,
          lease_until: null,
          updated_at: this.now(),
        }
        if (!(await this.jobs.update(row.id, ready, trx))) return false
        // The file is the export's now: it leaves the deletion queue in the same commit.
        if ((await unqueueBlobs(trx, [garbageId])) === 0) throw new Collected()
        return true
      })
    } catch (err) {
      if (!(err instanceof Collected)) throw err
      // The process stalled past the janitor's hour, and the janitor deleted the key, before or
      // after the file appeared: queued again (the file may exist), and the export built again.
      await queueNewBlob(this.db, built.blobKey, this.now())
      this.opts.logger?.warn(
        { export: row.id },
        'export file collected before it was recorded; building again',
      )
      await this.jobs.release(row.id)
      return
    }
    if (recorded) metrics.exportBuilds.inc({ kind: row.kind, result: 'ready' })
    // Deleted, or taken over after a lease ran out: this copy of the results belongs to no one.
    // Its key stays queued, so a failure to delete it here is the janitor's to mend.
    if (!recorded) await this.blobs.delete(built.blobKey)
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
