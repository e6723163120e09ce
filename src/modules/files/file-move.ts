import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, parentOf } from '../../api/paths.js'
import { unitOfWork } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'
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
import { type FileRepository, type FileRow, queueBlobDeletion } from './file-repository.js'
import { authorOf } from './new-paths.js'

export interface MoveInput {
  destination?: string
  overwrite?: boolean
}

type Deps = OperationDeps & { fileAccess: FileAccess }

const BATCH = 500

/**
 * POST /file_actions/move/{path}: rename or move in one transaction. The row keeps its id; the
 * paths of everything inside a folder are rewritten by one UPDATE (`new || substr(path, n)`), so
 * moving a folder costs the same number of statements whatever it holds. A case-only rename
 * (`a.txt` → `A.txt`) is allowed: the lower-case path, and with it every lookup, stays the same.
 */
export async function movePath(d: Deps, p: Principal, rawPath: string, input: MoveInput): Promise<void> {
  const { src, dest, overwrite, access } = await operands(d.fileAccess, p, rawPath, input, 'delete')
  if (src === dest) throw ERRORS.destinationSame('The destination is the source itself')
  // Read once more in the transaction; here it lets the folder behaviors at the destination
  // refuse the names that would land there, before the transaction (whose connection, on SQLite,
  // is the only one) begins.
  const before = await d.repos.files.findByPath(p.siteId, src)
  if (before) {
    // A folder moved leaves its folder and appears in another: both may be locked.
    if (before.type === 'directory') await d.folderRules.checkFolderChange(p.siteId, [src, dest], access)
    await checkLandingNames(d.folderRules, p.siteId, before, dest, () =>
      d.repos.files.descendants(p.siteId, before.path_lower).selectAll().execute(),
    )
  }
  const ctx = contextOf(p)
  const now = d.now()
  await unitOfWork(d.repos, async (tx) => {
    await tx.files.lockPaths(p.siteId, [src, dest])
    const source = await tx.files.findByPath(p.siteId, src)
    if (!source) throw ERRORS.fileNotFound(`${src} not found`)
    refuseOwnSubtree(source, dest)
    const caseOnly = dest.toLowerCase() === source.path_lower
    const existing = caseOnly ? undefined : await tx.files.findByPath(p.siteId, dest)
    checkDestination(source, existing, overwrite)
    if (!existing && !caseOnly) await tx.files.ensureParents(ctx, authorOf(p), dest, now, true)
    const base = existing ? existing.path : await storedSpelling(tx.files, p.siteId, dest)
    if (base === source.path) {
      throw ERRORS.destinationSame('The destination is the source itself')
    }

    let target: FileRow
    if (existing?.type === 'directory') {
      await mergeInto(tx.files, tx.db, p.siteId, source, existing, now)
      target = existing
    } else {
      if (existing) {
        // A file replaced by a moved file: the moved one keeps its id, the old one's bytes go.
        await tx.files.delete(existing.id)
        if (existing.blob_key) await queueBlobDeletion(tx.db, existing.blob_key, now)
      }
      await tx.files.update(source.id, {
        path: base,
        path_lower: base.toLowerCase(),
        parent_lower: parentOf(base).toLowerCase(),
        name: nameOf(base),
      })
      target = { ...source, name: nameOf(base) }
    }
    if (source.type === 'directory') {
      await tx.folders.rewriteInside(p.siteId, source, base)
      await d.folderRules.followMove(tx.db, p.siteId, source.path, base)
    }
    await recordTransfer(tx.db, ctx, 'move', source, base, target, now)
  })
}

/**
 * Moves the folder `source` into the existing folder `existing` (overwrite): folders that exist
 * on both sides merge (the source's row goes), a file replaces a file (the old one's bytes are
 * queued), a file against a folder is destination-exists. What is left of the source is then
 * rewritten under the destination by rewriteInside.
 */
async function mergeInto(
  files: FileRepository,
  db: Kysely<Database>,
  siteId: number,
  source: FileRow,
  existing: FileRow,
  now: number,
): Promise<void> {
  const present = new Map<string, FileRow>()
  for (const r of await files.descendants(siteId, existing.path_lower).selectAll().execute()) {
    present.set(r.path_lower, r)
  }
  const depth = source.path.split('/').length
  const drop = [source.id]
  for (const r of await files.descendants(siteId, source.path_lower).selectAll().execute()) {
    const there = present.get(rebase(r.path_lower, depth, existing.path_lower))
    if (!there) continue
    if (there.type !== r.type) throw typeClash(there, r, 'moved')
    if (r.type === 'directory') {
      drop.push(r.id)
    } else {
      drop.push(there.id)
      if (there.blob_key) await queueBlobDeletion(db, there.blob_key, now)
    }
  }
  for (let i = 0; i < drop.length; i += BATCH) {
    await files.deleteMany(drop.slice(i, i + BATCH))
  }
}
