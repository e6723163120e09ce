import type { Insertable, Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, parentOf } from '../../api/paths.js'
import { BlobNotFoundError, type BlobStore } from '../../blobs/blob-store.js'
import { queueChecksums, wakeChecksumWorkers } from '../../checksums/checksum-queue.js'
import { unitOfWork } from '../../db/repository.js'
import type { Database, FilesTable } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { contextOf } from '../actions/action-recorder.js'
import {
  checkDestination,
  checkLandingNames,
  type OperationDeps,
  operands,
  rebase,
  recordTransfer,
  refuseOwnSubtree,
  storedSpelling,
  typeClash,
} from './destination-rules.js'
import type { FileAccess } from './file-access.js'
import {
  type Author,
  type FileRepository,
  type FileRow,
  queueBlobDeletion,
  queueNewBlob,
  requeueBlobs,
  unqueueBlobs,
} from './file-repository.js'
import { authorOf } from './new-paths.js'

export interface CopyInput {
  destination?: string
  overwrite?: boolean
  /** Copy a folder's subfolders only, no files. */
  structure?: boolean
}

type Deps = OperationDeps & { blobs: BlobStore; fileAccess: FileAccess }

/** A new blob made for one source file, and its blob_garbage row until the copy commits. */
interface BlobCopy {
  key: string
  garbageId: number
}

/** Blob copies running at once: enough to overlap disk latency, few enough to leave I/O for others. */
const PARALLEL_COPIES = 4
/** How often a long copy renews its queued blobs (the janitor's grace is an hour). */
const TOUCH_EVERY_MS = 5 * 60_000
/** Rows per INSERT (SQLite allows 32,766 parameters; a row has 17 columns). */
const BATCH = 500

/**
 * POST /file_actions/copy/{path}. The bytes are copied first, outside any transaction, each new
 * blob under a key queued for deletion before the blob is written; then one transaction writes
 * the new rows and takes the blobs off the queue. A failure or crash anywhere (right after a blob
 * was written included) leaves the copies queued, so nothing leaks and nothing is deleted inline.
 * The source is copied as it was when the copy started.
 */
export async function copyPath(d: Deps, p: Principal, rawPath: string, input: CopyInput): Promise<void> {
  const { src, dest, overwrite, access } = await operands(d.fileAccess, p, rawPath, input, 'read')
  if (src.toLowerCase() === dest.toLowerCase()) {
    throw ERRORS.destinationSame('The destination is the source itself')
  }
  const files = d.repos.files
  const source = await files.findByPath(p.siteId, src)
  if (!source) throw ERRORS.fileNotFound(`${src} not found`)
  if (source.type === 'directory') access.require(src, 'list')
  else if (input.structure === true) {
    throw ERRORS.requestParamsInvalid('structure=true copies folders only')
  }
  refuseOwnSubtree(source, dest)
  // Checked again in the transaction; here it spares copying bytes for nothing.
  checkDestination(source, await files.findByPath(p.siteId, dest), overwrite)

  let rows = [source]
  if (source.type === 'directory') {
    const inside = await files
      .descendants(p.siteId, source.path_lower)
      .selectAll()
      .orderBy('path_lower')
      .execute()
    rows = rows.concat(input.structure === true ? inside.filter((r) => r.type === 'directory') : inside)
  }
  if (source.type === 'directory') await d.folderRules.checkFolderChange(p.siteId, [dest], access)
  await checkLandingNames(d.folderRules, p.siteId, source, dest, async () => rows.slice(1))
  const copies = await copyBlobs(d, rows)

  const ctx = contextOf(p)
  const author = authorOf(p)
  const now = d.now()
  // A source whose checksums are not known yet: its copy (another blob) gets a job of its own.
  const unsummed: string[] = []
  await unitOfWork(d.repos, async (tx) => {
    unsummed.length = 0
    await tx.files.lockPaths(p.siteId, [source.path, dest])
    const existing = await tx.files.findByPath(p.siteId, dest)
    checkDestination(source, existing, overwrite)
    if (!existing) await tx.files.ensureParents(ctx, author, dest, now, true)
    const base = existing ? existing.path : await storedSpelling(tx.files, p.siteId, dest)
    const present = new Map<string, FileRow>()
    if (existing) {
      present.set(existing.path_lower, existing)
      if (existing.type === 'directory') {
        for (const r of await tx.files.descendants(p.siteId, existing.path_lower).selectAll().execute()) {
          present.set(r.path_lower, r)
        }
      }
    }

    const depth = source.path.split('/').length
    const inserts: Insertable<FilesTable>[] = []
    const used: number[] = []
    for (const r of rows) {
      const target = rebase(r.path, depth, base)
      const copy = copies.get(r.id)
      if (copy) used.push(copy.garbageId)
      if (copy && r.md5 === null) unsummed.push(copy.key)
      const there = present.get(target.toLowerCase())
      if (!there) {
        inserts.push(newRow(p.siteId, r, target, copy?.key ?? null, author, now))
        continue
      }
      if (there.type !== r.type) throw typeClash(there, r, 'copied')
      if (r.type === 'directory') continue // folders merge
      await replaceFile(tx.files, tx.db, there, r, copy?.key ?? null, author, now)
    }
    for (let i = 0; i < inserts.length; i += BATCH) {
      await tx.files.insertMany(inserts.slice(i, i + BATCH))
    }
    await claimBlobs(tx.db, used)
    await queueChecksums(tx.db, unsummed, now)
    const root = await tx.files.findByPath(p.siteId, base)
    await recordTransfer(tx.db, ctx, 'copy', source, base, root!, now)
  })
  if (unsummed.length > 0) wakeChecksumWorkers()
}

function newRow(
  siteId: number,
  r: FileRow,
  path: string,
  blobKey: string | null,
  author: Author,
  now: number,
): Insertable<FilesTable> {
  return {
    site_id: siteId,
    path,
    path_lower: path.toLowerCase(),
    parent_lower: parentOf(path).toLowerCase(),
    name: nameOf(path),
    type: r.type,
    size: r.type === 'file' ? r.size : 0,
    blob_key: blobKey,
    md5: r.md5,
    crc32: r.crc32,
    sha256: r.sha256,
    custom_metadata: r.custom_metadata,
    created_at: now,
    mtime: now,
    provided_mtime: r.provided_mtime,
    created_by_id: author.userId,
    created_by_api_key_id: author.apiKeyId,
    last_modified_by_id: author.userId,
    last_modified_by_api_key_id: author.apiKeyId,
  }
}

/** A file replaced by a copy keeps its id and creation; its old bytes go to the janitor. */
async function replaceFile(
  files: FileRepository,
  db: Kysely<Database>,
  there: FileRow,
  r: FileRow,
  blobKey: string | null,
  author: Author,
  now: number,
): Promise<void> {
  await files.update(there.id, {
    blob_key: blobKey,
    size: r.size,
    md5: r.md5,
    crc32: r.crc32,
    sha256: r.sha256,
    custom_metadata: r.custom_metadata,
    mtime: now,
    provided_mtime: r.provided_mtime,
    last_modified_by_id: author.userId,
    last_modified_by_api_key_id: author.apiKeyId,
  })
  if (there.blob_key) await queueBlobDeletion(db, there.blob_key, now)
}

/**
 * Copies the blob of every file among `rows`, a few at a time; stops at the first failure. Each
 * copy's key is queued (committed) before its bytes are written, so a crash mid-copy leaves only
 * queued keys. The queue rows of a long copy are touched every few minutes, so the janitor (which
 * waits an hour after a row is written) never collects a blob this copy is still about to use.
 */
async function copyBlobs(d: Deps, rows: FileRow[]): Promise<Map<number, BlobCopy>> {
  const files = rows.filter((r) => r.type === 'file' && r.blob_key !== null)
  const out = new Map<number, BlobCopy>()
  /** Every queue row of this copy, those of blobs still being written too. */
  const queued: number[] = []
  let next = 0
  let failure: unknown = null
  let touched = d.now()
  const worker = async () => {
    while (failure === null && next < files.length) {
      const r = files[next++]!
      try {
        const key = d.blobs.newKey()
        const garbageId = await queueNewBlob(d.repos.files.db, key, d.now())
        queued.push(garbageId)
        await d.blobs.copy(r.blob_key!, key)
        out.set(r.id, { key, garbageId })
        if (d.now() - touched > TOUCH_EVERY_MS) {
          touched = d.now()
          await touch(d, [...queued], touched)
        }
      } catch (err) {
        failure ??=
          err instanceof BlobNotFoundError
            ? ERRORS.fileNotFound(`${r.path} was deleted while it was being copied`)
            : err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL_COPIES, files.length) }, worker))
  if (failure !== null) throw failure
  return out
}

async function touch(d: Deps, garbageIds: number[], now: number): Promise<void> {
  for (let i = 0; i < garbageIds.length; i += BATCH) {
    await requeueBlobs(d.repos.files.db, garbageIds.slice(i, i + BATCH), now)
  }
}

/**
 * Takes the new blobs off the deletion queue in the transaction that makes them files. A row
 * already gone means the janitor collected that blob after all (a single blob copy slower than
 * its grace period): the copy fails rather than commit files without bytes.
 */
async function claimBlobs(db: Kysely<Database>, garbageIds: number[]): Promise<void> {
  let claimed = 0
  for (let i = 0; i < garbageIds.length; i += BATCH) {
    claimed += await unqueueBlobs(db, garbageIds.slice(i, i + BATCH))
  }
  if (claimed !== garbageIds.length) {
    throw new Error('Copied blobs were collected before the copy could commit; try the copy again')
  }
}
