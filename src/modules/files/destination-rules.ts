import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import type { ApiError } from '../../api/errors.js'
import { isWithin, nameOf, parentOf } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { type ActionContext, recordAction } from '../actions/action-recorder.js'
import type { FolderRules } from '../behaviors/folder-rules.js'
import type { AccessView, Capability, FileAccess } from './file-access.js'
import { describeFileAction } from './file-display.js'
import { type FileRepository, type FileRow, fileTargets } from './file-repository.js'
import type { FileTreeRepositories } from './folder-repository.js'
import { normalizeExistingPath, normalizeNewPath } from './new-paths.js'

/** What copy and move need from the container. */
export interface OperationDeps {
  repos: FileTreeRepositories
  /** The folder behaviors the names landing at the destination must pass. */
  folderRules: FolderRules
  now: () => number
}

/** The `destination` of a copy or move: required, not blank, normalised as a new path. */
export function destinationOf(raw: string | undefined): string {
  if (raw === undefined || raw.trim() === '') {
    throw ERRORS.requestParamsRequired('Missing required parameter: destination')
  }
  return normalizeNewPath(raw, 'destination')
}

/**
 * The two paths of a copy or move, normalised, once the caller may use `sourceCap` on the
 * source and write at the destination.
 */
export async function operands(
  fileAccess: FileAccess,
  p: Principal,
  rawPath: string,
  input: { destination?: string; overwrite?: boolean },
  sourceCap: Capability,
): Promise<{ src: string; dest: string; overwrite: boolean; access: AccessView }> {
  const src = normalizeExistingPath(rawPath)
  const dest = destinationOf(input.destination)
  const access = await fileAccess.of(p)
  access.require(src, sourceCap)
  access.require(dest, 'write')
  return { src, dest, overwrite: input.overwrite === true, access }
}

/**
 * A folder cannot go inside itself: `a` → `a/b` would have to contain its own copy (or, for a
 * move, become its own child). Checked before the destination's existence, whatever `overwrite`.
 */
export function refuseOwnSubtree(source: FileRow, dest: string): void {
  const destLower = dest.toLowerCase()
  if (destLower !== source.path_lower && isWithin(destLower, source.path_lower)) {
    throw ERRORS.destinationParentConflict(
      `${dest} is inside ${source.path}: nothing can be copied or moved into itself`,
    )
  }
}

/**
 * What may stand at the destination. Nothing, or (with `overwrite`) the same kind of thing: a file
 * is replaced by a file, a folder merges into a folder. A file against a folder is always
 * destination-exists. A folder cannot merge into a folder that contains it (`a/b` → `a`): the
 * result would depend on the order rows are visited in.
 */
export function checkDestination(source: FileRow, existing: FileRow | undefined, overwrite: boolean): void {
  if (!existing) return
  const what = existing.type === 'directory' ? 'A folder' : 'A file'
  if (!overwrite) {
    throw ERRORS.destinationExists(
      `${what} already exists at ${existing.path} (send overwrite=true to replace it)`,
    )
  }
  if (existing.type !== source.type) {
    throw ERRORS.destinationExists(
      `${what} exists at ${existing.path}: a ${source.type === 'directory' ? 'folder' : 'file'} cannot replace it`,
    )
  }
  if (source.type === 'directory' && isWithin(source.path_lower, existing.path_lower)) {
    throw ERRORS.destinationParentConflict(
      `${existing.path} contains ${source.path}: a folder cannot be merged into a folder above it`,
    )
  }
}

/** A row of the source meeting a row of the other type where it would land inside a folder. */
export function typeClash(there: FileRow, r: FileRow, verb: 'copied' | 'moved'): ApiError {
  const kind = (row: FileRow) => (row.type === 'directory' ? 'folder' : 'file')
  return ERRORS.destinationExists(
    `${there.path} exists as a ${kind(there)}: the ${verb} ${kind(r)} cannot replace it`,
  )
}

/**
 * The Action of a copy or move, in its transaction: the path is where the source landed
 * (`base`), `target` the row there.
 */
export async function recordTransfer(
  db: Kysely<Database>,
  ctx: ActionContext,
  action: 'copy' | 'move',
  source: FileRow,
  base: string,
  target: FileRow,
  now: number,
): Promise<void> {
  await recordAction(
    db,
    ctx,
    {
      action,
      display: describeFileAction(action, base, source.type, { source: source.path, destination: base }),
      path: base,
      source: source.path,
      destination: base,
      targets: fileTargets(target),
    },
    now,
  )
}

/**
 * The path a new row at `dest` gets: the name as the caller wrote it, under the parent folder as
 * it is stored, so a folder's children share its spelling (`Docs/x`, not `docs/x`).
 */
export async function storedSpelling(files: FileRepository, siteId: number, dest: string): Promise<string> {
  const parent = parentOf(dest)
  if (parent === '') return dest
  const row = await files.findByPath(siteId, parent)
  return row ? `${row.path}/${nameOf(dest)}` : dest
}

/** `old/x/y` with `old` (any spelling) replaced by `base`, segment-wise. */
export function rebase(path: string, sourceDepth: number, base: string): string {
  const rest = path.split('/').slice(sourceDepth)
  return rest.length === 0 ? base : `${base}/${rest.join('/')}`
}

/**
 * Refuses a copy or move whose files would land where a folder behavior refuses their names
 * (extensions, name pattern, length), before anything changes. A file lands at `dest`; a folder's
 * files land under it (`rows` lists what is inside the source, read only when a rule is near).
 */
export async function checkLandingNames(
  rules: FolderRules,
  siteId: number,
  source: FileRow,
  dest: string,
  rows: () => Promise<FileRow[]>,
): Promise<void> {
  if (source.type !== 'directory') return rules.checkNewFile(siteId, dest)
  const depth = source.path.split('/').length
  await rules.checkTree(siteId, dest, async () =>
    (await rows()).filter((r) => r.type === 'file').map((r) => rebase(r.path, depth, dest)),
  )
}
