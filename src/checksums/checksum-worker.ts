import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import { BlobNotFoundError, type BlobStore } from '../blobs/blob-store.js'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database } from '../db/schema.js'
import { type ClaimShape, LeasedJobs } from '../jobs/leased-jobs.js'
import { LeasedWorker } from '../jobs/leased-worker.js'
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

/**
 * Computes the md5, CRC-32 and SHA-256 of uploaded files after their upload committed, outside any
 * request. A job row names a blob; a worker claims it with a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so several processes never read the same blob at once), reads the blob once from
 * the store, and writes the checksums to the files that still use that blob and have none. A
 * file replaced or deleted meanwhile no longer uses the blob: its job ends quietly. A process
 * that dies mid-read leaves its claim to run out (or, on SQLite, void at the next start); a
 * blob that cannot be read now is tried again once the lease has run out.
 */
export class ChecksumWorker extends LeasedWorker<JobRow> {
  private readonly jobs: LeasedJobs<'checksum_jobs'>

  constructor(
    private readonly db: Kysely<Database>,
    private readonly blobs: BlobStore,
    now: () => number,
    private readonly opts: ChecksumWorkerOptions,
  ) {
    super(opts, { emitter: checksumSignal, event: 'queued' }, 'checksum worker')
    this.jobs = new LeasedJobs(db, dialectOf(db), 'checksum_jobs', { leaseMs: opts.leaseMs, now })
  }

  get owner(): string {
    return this.jobs.owner
  }

  protected override claim(free: number): Promise<JobRow[]> {
    return this.jobs.claim<JobRow>(CLAIM, free)
  }

  protected override async releaseLeftOver(): Promise<void> {
    await this.jobs.releaseLeftOver(ANY)
  }

  protected override failed(err: unknown, row: JobRow): void {
    this.opts.logger?.error({ err, blob: row.blob_key }, 'checksums could not be recorded')
  }

  protected override async renew(row: JobRow): Promise<void> {
    try {
      await this.jobs.renew(row.id)
    } catch (err) {
      // The next renewal tries again; the lease is long enough to miss one.
      this.opts.logger?.warn({ err, job: row.id }, 'checksum lease could not be renewed')
    }
  }

  protected override async run(row: JobRow, signal: AbortSignal): Promise<void> {
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
        .set({ md5: sums.md5, crc32: sums.crc32, sha256: sums.sha256 })
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
