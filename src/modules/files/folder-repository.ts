import { type Kysely, type SqlBool, sql } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'
import { type FileRepository, type FileRow, insideFolder } from './file-repository.js'

/** The repositories of the file tree: its rows, and the statements over a folder's contents. */
export interface FileTreeRepositories {
  files: FileRepository
  folders: FolderRepository
}

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

/** Characters as SQL counts them (code points), not UTF-16 units as JavaScript does. */
const sqlLength = (s: string) => [...s].length

/**
 * Statements over everything inside a folder, each one statement whatever the folder holds: its
 * listing, the deletion of its contents and the rewriting of their paths when it moves. Their
 * range conditions come from insideFolder, which follows the dialect's path index.
 */
export class FolderRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new FolderRepository(db, this.dialect) as this
  }

  /** One page of a folder listing (GET /folders/{path}). */
  page(siteId: number, listing: FolderListing, list: ListRequest): Promise<Page<FileRow>> {
    const dialect = this.dialect
    let q = this.db.selectFrom('files').selectAll().where('site_id', '=', siteId)
    if (listing.search !== '') {
      if (listing.scope !== '') q = q.where(insideFolder(listing.scope, dialect))
      q = q.where(
        sql<SqlBool>`lower(name) like ${`%${escapeLike(listing.search.toLowerCase())}%`} escape '\\'`,
      )
      const regions = listing.regions
      if (regions !== undefined) {
        q = q.where((eb) =>
          eb.or(regions.flatMap((r) => [eb('path_lower', '=', r), insideFolder(r, dialect)])),
        )
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
   * Deletes everything inside a folder (not the folder's own row) and queues the blobs of its
   * files for the janitor by one INSERT … SELECT, so the number of files inside does not change
   * the number of statements. In a transaction.
   */
  async deleteInside(siteId: number, folderLower: string, now: number): Promise<void> {
    await this.db
      .insertInto('blob_garbage')
      .columns(['blob_key', 'created_at'])
      .expression(
        this.inside(siteId, folderLower)
          .where('blob_key', 'is not', null)
          .select([sql<string>`blob_key`.as('blob_key'), sql<number>`${sql.lit(now)}`.as('created_at')]),
      )
      .execute()
    await this.db
      .deleteFrom('files')
      .where('site_id', '=', siteId)
      .where(insideFolder(folderLower, this.dialect))
      .execute()
  }

  /** Rows strictly inside a folder (every depth), as FileRepository.descendants. */
  private inside(siteId: number, folderLower: string) {
    const q = this.db.selectFrom('files').where('site_id', '=', siteId)
    return folderLower === '' ? q : q.where(insideFolder(folderLower, this.dialect))
  }

  /** Rewrites the paths of everything inside `source` to lie under `base` instead. */
  async rewriteInside(siteId: number, source: FileRow, base: string): Promise<void> {
    const oldLower = source.path_lower
    const baseLower = base.toLowerCase()
    // Positions count characters, as SQL's substr does; the stored spelling of a folder's
    // children has as many characters as the folder's own path.
    const from = sqlLength(source.path) + 1
    const fromLower = sqlLength(oldLower) + 1
    await this.db
      .updateTable('files')
      .set({
        path: sql<string>`cast(${base} as text) || substr(path, cast(${from} as integer))`,
        path_lower: sql<string>`cast(${baseLower} as text) || substr(path_lower, cast(${fromLower} as integer))`,
        parent_lower: sql<string>`cast(${baseLower} as text) || substr(parent_lower, cast(${fromLower} as integer))`,
      })
      .where('site_id', '=', siteId)
      .where(insideFolder(oldLower, this.dialect))
      .execute()
  }
}
