import { Readable } from 'node:stream'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, normalizePath, parentOf } from '../../api/paths.js'
import {
  type AssemblyPlan,
  type BlobChecksums,
  type BlobStore,
  StagedPartError,
  type StoredBlob,
} from '../../blobs/blob-store.js'
import { queueChecksums, wakeChecksumWorkers } from '../../checksums/checksum-queue.js'
import { isUniqueViolation } from '../../db/errors.js'
import { type UnitOfWork, unitOfWork } from '../../db/repository.js'
import type { Principal } from '../../identity/principal.js'
import { metrics } from '../../metrics/metrics.js'
import { randomHex } from '../../security/secrets.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { FolderRules } from '../behaviors/folder-rules.js'
import { storedSpelling } from './destination-rules.js'
import type { AccessView, FileAccess } from './file-access.js'
import { describeFileAction } from './file-display.js'
import { type FileJson, toFileJson } from './file-json.js'
import {
  type Author,
  type FileRepository,
  type FileRow,
  fileTargets,
  queueBlobDeletion,
  queueNewBlob,
  requeueBlobs,
  unqueueBlobKey,
} from './file-repository.js'
import { normalizeNewPath } from './new-paths.js'
import { type FileUploadPartJson, type UploadParts, type UploadRow, uploadNotFound } from './upload-parts.js'
import type { UploadRepositories } from './upload-repository.js'
import { checkParts, numbered, refuseEarly, type UploadOptions } from './upload-rules.js'

export type { UploadOptions }

/**
 * Files.com-style uploads: `action=put` opens an upload (or describes more of its parts), the
 * parts go to signed URLs (UploadParts), and `action=end` turns the staged parts into a file.
 */
export class UploadService {
  constructor(
    private readonly repos: UploadRepositories,
    private readonly blobs: BlobStore,
    /** The part URLs and the bytes sent to them (PUT /upload_parts). */
    readonly parts: UploadParts,
    private readonly fileAccess: FileAccess,
    /** The folder behaviors every new name must pass (upload rules). */
    private readonly folderRules: FolderRules,
    private readonly now: () => number,
  ) {}

  /** `action=put` without a ref, and begin_upload: checks the destination, opens an upload. */
  async begin(p: Principal, rawPath: string, opts: UploadOptions): Promise<FileUploadPartJson[]> {
    const first = checkParts(opts)
    const { upload, overwrites } = await this.open(p, rawPath, opts)
    const out: FileUploadPartJson[] = []
    for (let n = first; n < first + (opts.parts ?? 1); n++) {
      out.push(await this.parts.describe(upload, n, overwrites))
    }
    return out
  }

  /**
   * Opens an upload of `rawPath` for the caller (write permission, path rules, the parent and
   * what is at the path checked now), without describing any part: a protocol writer stores its
   * parts through `parts.store`, REST's `begin` describes them as signed URLs. `overwrites`: a
   * file is at the path now.
   */
  async open(
    p: Principal,
    rawPath: string,
    opts: UploadOptions,
  ): Promise<{ upload: UploadRow; overwrites: boolean }> {
    // The same rules as any new name (no segment ending in whitespace, not the root).
    const path = normalizeNewPath(rawPath, 'path')
    const access = await this.fileAccess.of(p)
    access.require(path, 'write')
    const mkdirParents = opts.mkdirParents ?? true
    const withRename = opts.withRename ?? false
    const { target, missing } = await refuseEarly(this.repos.files, p.siteId, path, mkdirParents, withRename)
    const now = this.now()
    // Before any byte is stored: the folder's upload rules (extensions, name pattern, length,
    // the name a renaming rule makes), and the locks on the folders it would create.
    await this.folderRules.checkNewFile(p.siteId, path, { at: now, username: p.user?.username ?? '' })
    await this.folderRules.checkFolderChange(p.siteId, missing, access)

    const lifetime = { expiry_seconds: opts.expirySeconds ?? null }
    const fields = {
      site_id: p.siteId,
      ref: randomHex(16),
      path,
      user_id: p.user?.id ?? null,
      api_key_id: p.apiKey?.id ?? null,
      mkdir_parents: mkdirParents ? 1 : 0,
      with_rename: withRename ? 1 : 0,
      provided_mtime: opts.providedMtime ?? null,
      created_at: now,
      expires_at: this.parts.expiresAt(now, lifetime),
      ...lifetime,
    }
    const upload = await this.repos.uploads.insert(fields)
    return { upload, overwrites: target?.type === 'file' }
  }

  /** `action=put` with a ref (and begin_upload with one): where to send more parts. */
  async continue(
    p: Principal,
    rawPath: string,
    ref: string,
    opts: UploadOptions,
  ): Promise<FileUploadPartJson[]> {
    const first = checkParts(opts)
    const path = normalizePath(rawPath)
    // With what is at the path now (for ask_about_overwrites): one read per part, not two. The
    // upload's own path is the same but for case, which keptAlive checks.
    const upload = await this.keptAlive(
      p,
      path,
      await this.repos.uploads.findOfSiteWithTarget(p.siteId, ref, path.toLowerCase()),
    )
    const out: FileUploadPartJson[] = []
    for (let n = first; n < first + (opts.parts ?? 1); n++) {
      out.push(await this.parts.describe(upload, n, upload.target_type === 'file'))
    }
    return out
  }

  /**
   * `action=end`: assembles parts 1…N into a new blob outside any transaction, then makes it the
   * file's content in one transaction. The new blob's key is queued for deletion before the blob
   * is written, and stays queued until that commit, so a failure or crash at any point (right
   * after assembling included) leaves no blob that nothing points to and nobody deletes.
   * The file's md5 and CRC-32 are null until the checksum job queued in that transaction has
   * read the blob (checksums/): the request never reads the upload back.
   */
  async end(p: Principal, rawPath: string, ref: string, opts: UploadOptions): Promise<FileJson> {
    checkParts(opts)
    const access = await this.fileAccess.of(p)
    return toFileJson(await this.finish(p, rawPath, ref, opts, access), access)
  }

  /**
   * `end` for every front end: the new file's row. `access` is the caller's, when already read.
   */
  async finish(
    p: Principal,
    rawPath: string,
    ref: string,
    opts: Pick<UploadOptions, 'providedMtime' | 'withRename' | 'recorder'>,
    access?: AccessView,
  ): Promise<FileRow> {
    const upload = await this.ownUpload(p, normalizePath(rawPath), ref)
    ;(access ?? (await this.fileAccess.of(p))).require(upload.path, 'write')
    // Where parts may have gone straight to the store, one look there gives the key the blob must
    // get and the parts the store holds; the assembly uses the same look.
    const plan = this.blobs.planAssembly
      ? await this.staged(upload, this.blobs.planAssembly(upload.ref))
      : undefined
    const { numbers, sizes } = await this.partNumbers(upload, plan)
    const key = plan?.key ?? this.blobs.newKey()
    const queuedAt = this.now()
    const garbageId = await queueNewBlob(this.repos.files.db, key, queuedAt)
    // On failure the key stays queued: the store may have written the blob all the same (an
    // answer lost on its way back from S3), and deleting a key that names nothing is harmless.
    const blob = await this.assemble(upload, numbers, sizes, key, plan)
    await this.keepQueued(key, garbageId, queuedAt)

    let row: FileRow | undefined
    for (let attempt = 1; !row; attempt++) {
      try {
        row = await unitOfWork(this.repos, (tx) => this.commit(tx, p, upload, blob, garbageId, opts))
      } catch (err) {
        // The free name chosen for with_rename was taken before its lock was: choose again.
        if (err instanceof NameTaken && attempt < 10) continue
        if (err instanceof NameTaken || isUniqueViolation(err)) {
          throw ERRORS.destinationExists(`${upload.path} was created meanwhile`)
        }
        throw err
      }
    }
    if (row.md5 === null) wakeChecksumWorkers()
    metrics.transferred(p.interface, 'up', row.size, true)
    // The new blob holds its own links to (or copy of) the bytes: the staged parts can go.
    await this.blobs.discardUpload(ref).catch(() => undefined)
    return row
  }

  private async commit(
    tx: UnitOfWork<UploadRepositories>,
    p: Principal,
    upload: UploadRow,
    blob: NewBlob,
    garbageId: number,
    opts: UploadOptions,
  ): Promise<FileRow> {
    const now = this.now()
    const ctx = contextOf(p)
    const author: Author = { userId: p.user?.id ?? null, apiKeyId: p.apiKey?.id ?? null }
    const withRename = opts.withRename ?? upload.with_rename === 1
    // The folder's renaming rules name the file now, at commit: an upload that never ends leaves
    // no name behind, and the time a timestamp shows is the time the file appeared.
    const wanted = await this.folderRules.storedPath(tx.db, p.siteId, upload.path, now, ctx.username ?? '')
    // One lock, taken once, keeps the global lock order (file-repository.ts): with_rename picks
    // its name first and takes the lock of that name only.
    const path = withRename ? await freeName(tx.files, p.siteId, wanted) : wanted
    await tx.files.lockPath(p.siteId, path)
    if (!(await tx.uploads.delete(upload.id))) throw uploadNotFound()
    await tx.uploads.deleteParts(upload.id)
    const mkdirParents = upload.mkdir_parents === 1
    await tx.files.ensureParents(ctx, author, path, now, mkdirParents)
    const existing = await tx.files.findByPath(p.siteId, path)
    if (existing && withRename) throw new NameTaken()
    if (existing?.type === 'directory') {
      throw ERRORS.destinationExists(`${existing.path} is a folder`)
    }
    const providedMtime = opts.providedMtime ?? upload.provided_mtime
    const content = {
      blob_key: blob.key,
      size: blob.size,
      md5: blob.md5 ?? null,
      crc32: blob.crc32 ?? null,
      sha256: blob.sha256 ?? null,
      mtime: now,
      provided_mtime: providedMtime,
      last_modified_by_id: author.userId,
      last_modified_by_api_key_id: author.apiKeyId,
    }
    let row: FileRow
    if (existing) {
      row = await tx.files.updateReturning(existing.id, content)
      if (existing.blob_key) await queueBlobDeletion(tx.db, existing.blob_key, now)
    } else {
      // Under its folder's stored spelling (`Docs/x`, not `docs/x`), as copies and moves do.
      const stored = await storedSpelling(tx.files, p.siteId, path)
      row = await tx.files.insert({
        ...content,
        site_id: p.siteId,
        path: stored,
        path_lower: stored.toLowerCase(),
        parent_lower: parentOf(stored).toLowerCase(),
        name: nameOf(stored),
        type: 'file',
        custom_metadata: '{}',
        created_at: now,
        created_by_id: author.userId,
        created_by_api_key_id: author.apiKeyId,
      })
    }
    const action = existing ? 'update' : 'create'
    await recordAction(
      tx.db,
      ctx,
      {
        action,
        display: opts.recorder?.display(action, row.path) ?? describeFileAction(action, row.path, 'file'),
        path: row.path,
        targets: fileTargets(row),
      },
      now,
    )
    await opts.recorder?.alsoRecord(tx.db, row, action, now)
    // The new blob is the file's now: it leaves the deletion queue in the same commit (a row
    // already gone means the janitor took it: no file without bytes), and its checksums, if
    // still unknown, are asked for in it too.
    if (!(await unqueueBlobKey(tx.db, blob.key)).includes(garbageId)) throw blobCollected()
    if (blob.md5 === undefined) await queueChecksums(tx.db, [blob.key], now)
    return row
  }

  /**
   * Keeps an upload alive while its client is connected (a protocol writer calls it, as a REST
   * client's requests would): 404 `file-upload-not-found` once it has expired or ended.
   */
  async keepAlive(p: Principal, rawPath: string, ref: string): Promise<void> {
    await this.ownUpload(p, normalizePath(rawPath), ref)
  }

  /**
   * Discards the caller's upload at once, its record, its parts' records and its staged bytes,
   * instead of leaving it to expire: a protocol client that went away will never end it. An
   * upload already gone (ended, expired, discarded) is no error.
   */
  async abandon(p: Principal, rawPath: string, ref: string): Promise<void> {
    const upload = await this.repos.uploads.findOfSite(p.siteId, ref)
    if (upload) {
      if (!isOwner(p, upload) || upload.path.toLowerCase() !== normalizePath(rawPath).toLowerCase()) {
        throw uploadNotFound()
      }
      // The rows first: a part still arriving then finds its upload gone and discards its bytes.
      await this.repos.uploads.transaction(async (tx) => {
        await tx.delete(upload.id)
        await tx.deleteParts(upload.id)
      })
    } else if (await this.repos.uploads.findByRef(ref)) {
      // Another site's: not the caller's to discard.
      throw uploadNotFound()
    }
    await this.blobs.discardUpload(ref)
  }

  /**
   * After an assembly slower than a few minutes, restarts the janitor's grace period of the new
   * blob's queue row, which the janitor collects an hour after it was written. A row already gone
   * was collected while the blob was being written (the blob may exist or not): its key is queued
   * again and the end fails; the parts are still staged, so it can be tried again.
   */
  private async keepQueued(key: string, garbageId: number, queuedAt: number): Promise<void> {
    const now = this.now()
    if (now - queuedAt < REQUEUE_AFTER_MS) return
    if ((await requeueBlobs(this.repos.files.db, [garbageId], now)) > 0) return
    await queueNewBlob(this.repos.files.db, key, now)
    throw blobCollected()
  }

  /** The caller's own upload of this path (same user, or the same site-wide key), kept alive. */
  private async ownUpload(p: Principal, path: string, ref: string): Promise<UploadRow> {
    return this.keptAlive(p, path, await this.repos.uploads.findOfSite(p.siteId, ref))
  }

  /** `upload`, as read, if it is the caller's own upload of this path: pushed back and returned; else 404. */
  private async keptAlive<T extends UploadRow>(
    p: Principal,
    path: string,
    upload: T | undefined,
  ): Promise<T> {
    const now = this.now()
    if (
      !upload ||
      !isOwner(p, upload) ||
      upload.expires_at <= now ||
      upload.path.toLowerCase() !== path.toLowerCase()
    ) {
      throw uploadNotFound()
    }
    // Pushed back, so that the janitor leaves it alone while its parts are sent or assembled
    // (unless a request of the last moments already did).
    const expiresAt = this.parts.extendedExpiry(now, upload)
    if (expiresAt !== null) await this.repos.uploads.extend(upload.id, expiresAt)
    return upload
  }

  /** Parts 1…N, without a gap (N = 0: an empty file), with the size each had when it was stored. */
  private async partNumbers(
    upload: UploadRow,
    plan: AssemblyPlan | undefined,
  ): Promise<{ numbers: number[]; sizes: number[] }> {
    let rows: { part_number: number; size: number }[] = await this.repos.uploads.partsOf(upload.id)
    // Parts sent straight to the blob store never passed through Wharf: the store listed them.
    if (rows.length === 0 && plan) {
      rows = plan.directParts.map((p) => ({ part_number: p.partNumber, size: p.size }))
    }
    const numbers = rows.map((r, i) => {
      if (r.part_number !== i + 1) {
        throw ERRORS.invalidUploadPartGap(`Part ${i + 1} was never uploaded, but part ${r.part_number} was`)
      }
      return r.part_number
    })
    return { numbers, sizes: rows.map((r) => r.size) }
  }

  /** The blob of the parts; an empty file's checksums are known at once (no bytes to read). */
  private async assemble(
    upload: UploadRow,
    numbers: number[],
    sizes: number[],
    key: string,
    plan: AssemblyPlan | undefined,
  ): Promise<NewBlob> {
    if (numbers.length === 0) return this.blobs.put(Readable.from([]), { key })
    return this.staged(upload, this.blobs.assemble(upload.ref, numbers, sizes, key, plan))
  }

  /** The answer to a part lost or missing from the store while it is listed or assembled. */
  private async staged<T>(upload: UploadRow, work: Promise<T>): Promise<T> {
    try {
      return await work
    } catch (err) {
      if (!(err instanceof StagedPartError)) throw err
      // Its parts went away: a concurrent `end` of the same upload finished first, or a part is lost.
      if (!(await this.repos.uploads.exists(upload.id))) throw uploadNotFound()
      throw ERRORS.fileNotUploaded(
        `Part ${err.partNumber} of this upload is missing or incomplete: send it again`,
      )
    }
  }
}

/** A new blob, with its checksums when they came free with it. */
type NewBlob = StoredBlob & Partial<BlobChecksums>

/** Whoever opened the upload: the same user, or (for a site-wide key) the same key. */
function isOwner(p: Principal, upload: UploadRow): boolean {
  if (p.user) return upload.user_id === p.user.id
  if (upload.user_id !== null) return false
  // Neither user nor key: the operator, or the visitor of a share link a site-wide key made (it
  // acts as a site admin); their uploads are recorded with neither too.
  return p.apiKey ? upload.api_key_id === p.apiKey.id : upload.api_key_id === null
}

/** The janitor's grace period is an hour: a queue row is touched well before it runs out. */
const REQUEUE_AFTER_MS = 5 * 60_000

function blobCollected(): Error {
  return new Error('The assembled upload was collected before it could be committed; end the upload again')
}

/** with_rename's name was taken between choosing it and locking it (PostgreSQL only). */
class NameTaken extends Error {}

/** The path itself if free, else the first free `name (n).ext`. */
async function freeName(files: FileRepository, siteId: number, path: string): Promise<string> {
  for (let n = 0; n <= MAX_RENAMES; n++) {
    const candidate = n === 0 ? path : numbered(path, n)
    if (!(await files.findByPath(siteId, candidate))) return candidate
  }
  throw ERRORS.destinationExists(`${path} and ${MAX_RENAMES} renamed copies exist`)
}

const MAX_RENAMES = 1000
