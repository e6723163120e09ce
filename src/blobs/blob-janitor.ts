import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'
import { FILE_LINK_MS } from '../security/signed-link.js'
import type { BlobStore } from './blob-store.js'

/** What one run removed, for tests and the debug log line. */
export interface JanitorReport {
  /** blob_garbage rows cleared (their blobs deleted, or already gone). */
  garbageDeleted: number
  /** Queued blobs the store failed to delete; their rows stay for the next run. */
  garbageFailed: number
  /** Expired uploads removed with their parts. */
  uploadsExpired: number
  /** Staged part folders no upload owns any more. */
  orphanPartsDiscarded: number
  /** Temporary files left by a crash mid-write. */
  temporaryRemoved: number
  /** Set when the run did nothing because another process was sweeping. */
  skipped?: true
}

/**
 * One janitor at a time among the processes sharing the database (`jobs/job-lease.ts`): `hold`
 * runs the work while this process holds the lease, or answers null when another one does.
 * `held()` turns false once the lease was lost, and the run stops at its next step.
 */
export interface JanitorLease {
  hold<T>(work: (held: () => boolean) => Promise<T>): Promise<T | null>
}

export interface JanitorOptions {
  logger?: Pick<Logger, 'debug' | 'warn' | 'error'> | undefined
  /**
   * How old a garbage row, an orphan part folder or a temporary file must be before it goes.
   * Garbage rows for blobs being committed are written just before the commit that deletes them,
   * so a young row may still name a blob about to be used.
   */
  graceMs?: number
  batchSize?: number
  /** Without one, runs in several processes may overlap (harmless, but the work is done twice). */
  lease?: JanitorLease | undefined
}

const HOUR = 3600_000

/**
 * Deletes what nothing refers to any more: blobs queued in blob_garbage, uploads past their
 * expiry with their staged parts, part folders without an upload, and stale temporary files.
 * Every step is idempotent, so a crash midway or two processes sharing a PostgreSQL database
 * running at once do no harm (at worst both delete the same file, which is a no-op the second time);
 * with a lease, only one process sweeps at a time. What it deletes is decided by the shared
 * database alone (garbage rows, expired upload rows, staged parts whose upload row is gone), never
 * by what one process remembers, so an upload in progress through another node is never touched;
 * the store's temporary files are each process's own.
 */
export class BlobJanitor {
  private readonly graceMs: number
  private readonly batchSize: number
  private readonly logger: JanitorOptions['logger']
  private readonly lease: JanitorLease | undefined
  private timer: NodeJS.Timeout | null = null
  /** The latest run; a new one starts only after it. */
  private last: Promise<unknown> = Promise.resolve()
  private pending = 0

  constructor(
    private readonly db: Kysely<Database>,
    private readonly blobs: BlobStore,
    private readonly now: () => number,
    opts: JanitorOptions = {},
  ) {
    this.graceMs = opts.graceMs ?? HOUR
    this.batchSize = opts.batchSize ?? 500
    this.logger = opts.logger
    this.lease = opts.lease
  }

  /** One full pass. Runs never overlap: a call during a run starts once that run ends. */
  runOnce(): Promise<JanitorReport> {
    this.pending++
    const run = this.last
      .catch(() => undefined)
      .then(() => this.work())
      .finally(() => {
        this.pending--
      })
    this.last = run
    return run
  }

  /** Runs every `intervalMs` in the background; the timer does not keep the process alive. */
  start(intervalMs: number): void {
    if (this.timer) return
    this.timer = setInterval(() => void this.tick(), intervalMs)
    this.timer.unref()
  }

  /** Stops the timer and waits for a run in progress to end. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.last.catch(() => undefined)
  }

  private async tick(): Promise<void> {
    // A run slower than the interval: skip this tick rather than queue another behind it.
    if (this.pending > 0) return
    try {
      const report = await this.runOnce()
      this.logger?.debug({ janitor: report }, 'janitor run')
    } catch (err) {
      this.logger?.error({ err }, 'janitor run failed')
    }
  }

  private async work(): Promise<JanitorReport> {
    if (!this.lease) return this.sweep(() => true)
    return (await this.lease.hold((held) => this.sweep(held))) ?? { ...emptyReport(), skipped: true }
  }

  private async sweep(held: () => boolean): Promise<JanitorReport> {
    const now = this.now()
    const cutoff = now - this.graceMs
    const report = emptyReport()
    // A lost lease (this process stalled past it) ends the run between steps: another process
    // may be sweeping by now.
    await this.collectGarbage(cutoff, report, held)
    if (held()) await this.expireUploads(now, report, held)
    if (held()) await this.discardOrphanParts(cutoff, report)
    if (held()) report.temporaryRemoved = await this.blobs.sweepTemporary(this.graceMs)
    return report
  }

  /** The blob first, then its row: a crash between them leaves a row whose blob is gone, which the next run clears. */
  private async collectGarbage(cutoff: number, report: JanitorReport, held: () => boolean): Promise<void> {
    const linksFrom = this.now() - FILE_LINK_MS
    let afterId = 0
    for (;;) {
      const rows = await this.db
        .selectFrom('blob_garbage')
        .select(['id', 'blob_key'])
        // A last guard against losing bytes: a blob some file still uses is never deleted, however
        // it came to be queued (its row is dropped and the slip logged).
        .select((eb) =>
          eb
            .exists(
              eb
                .selectFrom('files')
                .select('files.id')
                .whereRef('files.blob_key', '=', 'blob_garbage.blob_key'),
            )
            .as('in_use'),
        )
        // The bytes a file-aware webhook notification links to stay while it is being sent,
        // kept, or its last link may still be fetched (webhooks/endpoints/file-fields.ts).
        .select((eb) =>
          eb
            .exists(
              eb
                .selectFrom('webhook_notifications as n')
                .select('n.id')
                .whereRef('n.file_blob_key', '=', 'blob_garbage.blob_key')
                .where((w) =>
                  w.or([w('n.state', 'in', ['pending', 'held']), w('n.updated_at', '>=', linksFrom)]),
                ),
            )
            .as('linked'),
        )
        .where('created_at', '<', cutoff)
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(this.batchSize)
        .execute()
      const done: number[] = []
      for (const row of rows) {
        if (row.linked) continue
        if (row.in_use) {
          this.logger?.warn({ blobKey: row.blob_key }, 'janitor kept a queued blob that a file still uses')
          done.push(row.id)
          continue
        }
        try {
          await this.blobs.delete(row.blob_key)
          done.push(row.id)
        } catch (err) {
          report.garbageFailed++
          this.logger?.warn({ err, blobKey: row.blob_key }, 'janitor could not delete a blob')
        }
      }
      if (done.length > 0) await this.db.deleteFrom('blob_garbage').where('id', 'in', done).execute()
      report.garbageDeleted += done.length
      if (rows.length < this.batchSize || !held()) return
      afterId = rows[rows.length - 1]!.id
    }
  }

  /** The rows go in one transaction, then the staged bytes (a failure there leaves an orphan folder for later). */
  private async expireUploads(now: number, report: JanitorReport, held: () => boolean): Promise<void> {
    for (;;) {
      const batch = await this.db
        .selectFrom('uploads')
        .select('id')
        .where('expires_at', '<', now)
        .orderBy('id')
        .limit(this.batchSize)
        .execute()
      if (batch.length === 0) return
      const removed = await this.db.transaction().execute(async (trx) => {
        // Expiry checked again in the delete: only rows still expired go, and only their parts.
        const gone = await trx
          .deleteFrom('uploads')
          .where(
            'id',
            'in',
            batch.map((r) => r.id),
          )
          .where('expires_at', '<', now)
          .returning(['id', 'ref'])
          .execute()
        if (gone.length > 0) {
          await trx
            .deleteFrom('upload_parts')
            .where(
              'upload_id',
              'in',
              gone.map((r) => r.id),
            )
            .execute()
        }
        return gone
      })
      for (const { ref } of removed) {
        await this.discard(ref)
        report.uploadsExpired++
      }
      // Another process took this batch: the next select finds what is left, if anything.
      if (batch.length < this.batchSize || !held()) return
    }
  }

  /** Folders of parts older than the grace period whose upload row is gone (a crash, or a failed discard). */
  private async discardOrphanParts(cutoff: number, report: JanitorReport): Promise<void> {
    let candidates: string[] = []
    const flush = async () => {
      const live = await this.db.selectFrom('uploads').select('ref').where('ref', 'in', candidates).execute()
      const owned = new Set(live.map((r) => r.ref))
      for (const ref of candidates) {
        if (owned.has(ref)) continue
        if (await this.discard(ref)) report.orphanPartsDiscarded++
      }
      candidates = []
    }
    for await (const staged of this.blobs.stagedUploads()) {
      if (staged.modifiedAt >= cutoff) continue
      candidates.push(staged.ref)
      if (candidates.length >= this.batchSize) await flush()
    }
    if (candidates.length > 0) await flush()
  }

  private async discard(ref: string): Promise<boolean> {
    try {
      await this.blobs.discardUpload(ref)
      return true
    } catch (err) {
      this.logger?.warn({ err, ref }, 'janitor could not discard staged parts')
      return false
    }
  }
}

function emptyReport(): JanitorReport {
  return {
    garbageDeleted: 0,
    garbageFailed: 0,
    uploadsExpired: 0,
    orphanPartsDiscarded: 0,
    temporaryRemoved: 0,
  }
}
