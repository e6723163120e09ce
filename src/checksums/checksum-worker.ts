import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import { BlobNotFoundError, type BlobStore } from '../blobs/blob-store.js'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database } from '../db/schema.js'
import { JobLoop } from '../jobs/job-loop.js'
import { type ClaimShape, LeasedJobs } from '../jobs/leased-jobs.js'
import { checksumSignal } from './checksum-queue.js'

export interface ChecksumWorkerOptions {
  /** Blobs read at once in this process. */
  concurrency: number
  /** How long a claim lasts unless renewed; renewed every third of it while the blob is read. */
  leaseMs: number
  /** Longest wait between looks for work (jobs other processes queued, claims that ran out). */
  pollMs: number
  /** SQLite: one process owns the file, so claims left by a crash are void at start. */
  releaseClaimsOnStart?: boolean
  logger?: Logger | undefined
}

interface JobRow {
  id: number
  blob_key: string
  attempts: number
}

const ANY = sql<boolean>`1 = 1`

/** The oldest jobs first; each claim counts as an attempt. */
const CLAIM: ClaimShape = {
  key: 'checksums',
  due: () => ANY,
  orderBy: 'id',
  set: () => sql`attempts = attempts + 1`,
  returning: ['id', 'blob_key', 'attempts'],
}

/** Stopping the worker: the claim is handed back so the next process starts at once. */
class Stopping extends Error {}

/**
 * Computes the md5 and CRC-32 of uploaded files after their upload committed, outside any
 * request. A job row names a blob; a worker claims it with a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so several processes never read the same blob at once), reads the blob once from
 * the store, and writes the checksums to the files that still use that blob and have none. A
 * file replaced or deleted meanwhile no longer uses the blob: its job ends quietly. A process
 * that dies mid-read leaves its claim to run out (or, on SQLite, void at the next start); a
 * blob that cannot be read now is tried again once the lease has run out.
 */
export class ChecksumWorker extends JobLoop {
  private readonly jobs: LeasedJobs<'checksum_jobs'>
  private readonly running = new Map<number, { done: Promise<void>; abort: AbortController }>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly blobs: BlobStore,
    now: () => number,
    private readonly opts: ChecksumWorkerOptions,
  ) {
    super(opts.pollMs, opts.logger, 'checksum worker could not claim work')
    this.jobs = new LeasedJobs(db, dialectOf(db), 'checksum_jobs', { leaseMs: opts.leaseMs, now })
  }

  get owner(): string {
    return this.jobs.owner
  }

  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.opts.releaseClaimsOnStart) await this.jobs.releaseLeftOver(ANY)
    checksumSignal.on('queued', this.kick)
    this.kick()
  }

  /** Stops claiming; reads in progress stop at their next block and hand their claim back. */
  async stop(): Promise<void> {
    if (this.stopped) return
    checksumSignal.off('queued', this.kick)
    await this.halt()
    for (const r of this.running.values()) r.abort.abort(new Stopping('the server is stopping'))
    await Promise.allSettled([...this.running.values()].map((r) => r.done))
  }

  /** Resolves once no job is running in this process (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.looking) {
      await Promise.allSettled([this.looking, ...[...this.running.values()].map((r) => r.done)])
    }
  }

  protected override async look(): Promise<boolean> {
    const free = this.opts.concurrency - this.running.size
    if (free <= 0) return false
    const rows = await this.jobs.claim<JobRow>(CLAIM, free)
    for (const row of rows) this.launch(row)
    return rows.length < free
  }

  private launch(row: JobRow): void {
    const abort = new AbortController()
    const renew = setInterval(() => void this.renew(row.id), Math.max(50, this.opts.leaseMs / 3))
    renew.unref()
    const done = this.run(row, abort.signal)
      .catch((err) => this.opts.logger?.error({ err, blob: row.blob_key }, 'checksums could not be recorded'))
      .finally(() => {
        clearInterval(renew)
        this.running.delete(row.id)
        // A slot came free: there may be more to read.
        this.kick()
      })
    this.running.set(row.id, { done, abort })
  }

  private async renew(id: number): Promise<void> {
    try {
      await this.jobs.renew(id)
    } catch (err) {
      // The next renewal tries again; the lease is long enough to miss one.
      this.opts.logger?.warn({ err, job: id }, 'checksum lease could not be renewed')
    }
  }

  private async run(row: JobRow, signal: AbortSignal): Promise<void> {
    // Replaced, deleted, or given its checksums by a copy: nothing to read.
    if (!(await this.wanted(row.blob_key))) return this.finish(row.id)
    let sums: Awaited<ReturnType<BlobStore['checksums']>>
    try {
      sums = await this.blobs.checksums(row.blob_key, { signal })
    } catch (err) {
      if (signal.aborted) {
        await this.jobs.release(row.id, { attempts: sql<number>`attempts - 1` })
        return
      }
      // A file replaced while its blob was read: the janitor may have deleted the blob under it.
      if (!(await this.wanted(row.blob_key))) return this.finish(row.id)
      // Left claimed: another try once the lease has run out.
      const level = err instanceof BlobNotFoundError ? 'error' : 'warn'
      this.opts.logger?.[level](
        { err, blob: row.blob_key, attempts: row.attempts },
        'a blob could not be read for its checksums; it will be tried again',
      )
      return
    }
    await this.db.transaction().execute(async (trx) => {
      // Only files still on this very blob: a file that now points elsewhere keeps its own.
      await trx
        .updateTable('files')
        .set({ md5: sums.md5, crc32: sums.crc32 })
        .where('blob_key', '=', row.blob_key)
        .where('md5', 'is', null)
        .execute()
      await trx.deleteFrom('checksum_jobs').where('id', '=', row.id).execute()
    })
  }

  /** Whether a file still uses the blob and has no checksums yet. */
  private async wanted(blobKey: string): Promise<boolean> {
    const found = await this.db
      .selectFrom('files')
      .select('id')
      .where('blob_key', '=', blobKey)
      .where('md5', 'is', null)
      .limit(1)
      .executeTakeFirst()
    return found !== undefined
  }

  private async finish(id: number): Promise<void> {
    await this.db.deleteFrom('checksum_jobs').where('id', '=', id).execute()
  }
}
