import { type SqlBool, sql, type Transaction } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import type { SqlDialect } from '../../db/dialects/dialect.js'
import { selectPage } from '../../db/list-sql.js'
import type { Database } from '../../db/schema.js'
import { type Db, descendants, type FileRow, insideFolder } from './file-repository.js'

/**
 * Statements over everything inside a folder, each one statement whatever the folder holds: its
 * listing, the deletion of its contents and the rewriting of their paths when it moves. Their
 * range conditions come from insideFolder, which follows the dialect's path index.
 */

/** What a folder listing shows, the caller's permissions already applied. */
export interface FolderListing {
  /** '' for the direct children of `pathLower`; else names containing it, anywhere inside `scope`. */
  search: string
  pathLower: string
  /** The folder a search looks inside ('' for the whole site). */
  scope: string
  /** A search only within these folders (on them or inside them); undefined: all of `scope`. */
  regions?: string[] | undefined
  /** Only these children (path_lower); undefined: every child. */
  children?: string[] | undefined
  type?: 'file' | 'directory' | undefined
  /** Only what was modified after this time. */
  modifiedAfter: number | null
}

/** `%`, `_` and `\` of a search text are literal characters, not LIKE wildcards. */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** One page of a folder listing (GET /folders/{path}). */
export function folderPage(
  db: Db,
  dialect: SqlDialect,
  siteId: number,
  listing: FolderListing,
  list: ListRequest,
): Promise<Page<FileRow>> {
  let q = db.selectFrom('files').selectAll().where('site_id', '=', siteId)
  if (listing.search !== '') {
    if (listing.scope !== '') q = q.where(insideFolder(listing.scope, dialect))
    q = q.where(sql<SqlBool>`lower(name) like ${`%${escapeLike(listing.search.toLowerCase())}%`} escape '\\'`)
    const regions = listing.regions
    if (regions !== undefined) {
      q = q.where((eb) => eb.or(regions.flatMap((r) => [eb('path_lower', '=', r), insideFolder(r, dialect)])))
    }
  } else {
    q = q.where('parent_lower', '=', listing.pathLower)
    if (listing.children !== undefined) q = q.where('path_lower', 'in', listing.children)
  }
  if (listing.type !== undefined) q = q.where('type', '=', listing.type)
  if (listing.modifiedAfter !== null) q = q.where('mtime', '>', listing.modifiedAfter)
  return selectPage(q, list)
}

/**
 * Deletes everything inside a folder (not the folder's own row) and queues the blobs of its files
 * for the janitor by one INSERT … SELECT, so the number of files inside does not change the
 * number of statements.
 */
export async function deleteInside(
  trx: Transaction<Database>,
  dialect: SqlDialect,
  siteId: number,
  folderLower: string,
  now: number,
): Promise<void> {
  await trx
    .insertInto('blob_garbage')
    .columns(['blob_key', 'created_at'])
    .expression(
      descendants(trx, dialect, siteId, folderLower)
        .where('blob_key', 'is not', null)
        .select([sql<string>`blob_key`.as('blob_key'), sql<number>`${sql.lit(now)}`.as('created_at')]),
    )
    .execute()
  await trx
    .deleteFrom('files')
    .where('site_id', '=', siteId)
    .where(insideFolder(folderLower, dialect))
    .execute()
}

/** Characters as SQL counts them (code points), not UTF-16 units as JavaScript does. */
const sqlLength = (s: string) => [...s].length

/** Rewrites the paths of everything inside `source` to lie under `base` instead. */
export async function rewriteInside(
  trx: Transaction<Database>,
  dialect: SqlDialect,
  siteId: number,
  source: FileRow,
  base: string,
): Promise<void> {
  const oldLower = source.path_lower
  const baseLower = base.toLowerCase()
  // Positions count characters, as SQL's substr does; the stored spelling of a folder's children
  // has as many characters as the folder's own path.
  const from = sqlLength(source.path) + 1
  const fromLower = sqlLength(oldLower) + 1
  await trx
    .updateTable('files')
    .set({
      path: sql<string>`cast(${base} as text) || substr(path, cast(${from} as integer))`,
      path_lower: sql<string>`cast(${baseLower} as text) || substr(path_lower, cast(${fromLower} as integer))`,
      parent_lower: sql<string>`cast(${baseLower} as text) || substr(parent_lower, cast(${fromLower} as integer))`,
    })
    .where('site_id', '=', siteId)
    .where(insideFolder(oldLower, dialect))
    .execute()
}
