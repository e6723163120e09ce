import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, parentOf } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import type { FileRepository, FileRow } from './file-repository.js'
import { MAX_PARTS } from './upload-parts.js'

/** Options of `action=put` / `action=end` / begin_upload, as the routes pass them on. */
export interface UploadOptions {
  /** First part to describe (default 1). */
  part?: number | undefined
  /** How many parts to describe (begin_upload; default 1). */
  parts?: number | undefined
  restart?: number | undefined
  mkdirParents?: boolean | undefined
  /** Epoch ms. */
  providedMtime?: number | undefined
  withRename?: boolean | undefined
  /**
   * The upload's own lifetime without activity (a protocol writer's, kept alive by its
   * connection); by default UPLOAD_EXPIRY_MINUTES. Not an option of the REST API.
   */
  expirySeconds?: number | undefined
  /**
   * What the upload's Action says and what else commits with it (a share link's own record of
   * its visitor's upload); by default the plain "Uploaded …" and nothing else.
   */
  recorder?: UploadRecorder | undefined
}

/** A front end's own words for an upload's Action, and its records written in the same commit. */
export interface UploadRecorder {
  display(action: 'create' | 'update', path: string): string
  alsoRecord(db: Kysely<Database>, row: FileRow, action: 'create' | 'update', now: number): Promise<void>
}

/**
 * Refuses what would fail at `end` anyway, before any byte is sent: a folder at the path, a
 * file where a folder should be, a missing folder when mkdir_parents is false. Returns what is
 * at the path and the folders the upload would create.
 */
export async function refuseEarly(
  files: FileRepository,
  siteId: number,
  path: string,
  mkdirParents: boolean,
  withRename: boolean,
) {
  const segments = path.split('/')
  const lowers = segments.map((_, i) =>
    segments
      .slice(0, i + 1)
      .join('/')
      .toLowerCase(),
  )
  const rows = await files.kindsAt(siteId, lowers)
  const byLower = new Map(rows.map((r) => [r.path_lower, r]))
  const missing: string[] = []
  for (const [i, lower] of lowers.slice(0, -1).entries()) {
    const row = byLower.get(lower)
    if (!row) missing.push(segments.slice(0, i + 1).join('/'))
    if (row?.type === 'file') {
      throw ERRORS.destinationParentConflict(`${row.path} is a file, so it cannot hold ${path}`)
    }
    if (!row && !mkdirParents) {
      throw ERRORS.destinationParentDoesNotExist(
        `The folder ${parentOf(path)} does not exist (send mkdir_parents=true to create it)`,
      )
    }
  }
  const target = byLower.get(path.toLowerCase())
  if (target?.type === 'directory' && !withRename) {
    throw ERRORS.destinationExists(`${target.path} is a folder`)
  }
  return { target, missing }
}

/** Part numbers 1…10000 and no resuming from an offset. Returns the first part number. */
export function checkParts(opts: UploadOptions): number {
  if (opts.restart !== undefined && opts.restart !== 0) {
    throw ERRORS.invalidUploadOffset('Uploads cannot restart at an offset: send restart=0')
  }
  const first = opts.part ?? 1
  if (first + (opts.parts ?? 1) - 1 > MAX_PARTS) {
    throw ERRORS.partNumberTooLarge(`Part numbers go up to ${MAX_PARTS}`)
  }
  return first
}

/** `report.pdf` → `report (1).pdf`; `notes` → `notes (1)`. */
export function numbered(path: string, n: number): string {
  const dir = parentOf(path)
  const name = nameOf(path)
  const dot = name.lastIndexOf('.')
  const renamed = dot > 0 ? `${name.slice(0, dot)} (${n})${name.slice(dot)}` : `${name} (${n})`
  return dir === '' ? renamed : `${dir}/${renamed}`
}
