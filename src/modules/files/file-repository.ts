import crypto from 'node:crypto'
import {
  type Expression,
  type Insertable,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
  type Updateable,
} from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, parentOf } from '../../api/paths.js'
import type { SqlDialect } from '../../db/dialects/dialect.js'
import { Repository } from '../../db/repository.js'
import type { Database, FilesTable } from '../../db/schema.js'
import { type ActionContext, recordAction } from '../actions/action-recorder.js'
import { describeFileAction } from './file-display.js'

/** One row of the files table: a file or a folder. */
export type FileRow = Selectable<FilesTable>

/** Who made a change, for the created_by / last_modified_by columns. */
export interface Author {
  userId: number | null
  apiKeyId: number | null
}

/**
 * The files table: one row per file or folder, addressed by path (case-insensitive, stored as
 * given) or by id. Shared by the upload, download, folder and file-operation services.
 */
export class FileRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new FileRepository(db, this.dialect) as this
  }

  findByPath(siteId: number, path: string): Promise<FileRow | undefined> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('path_lower', '=', path.toLowerCase())
      .executeTakeFirst()
  }

  findById(siteId: number, id: number): Promise<FileRow | undefined> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  /** The rows at these lowercased paths: their spelling and kind, for checks before an upload. */
  kindsAt(siteId: number, lowers: string[]) {
    return this.db
      .selectFrom('files')
      .select(['path', 'path_lower', 'type'])
      .where('site_id', '=', siteId)
      .where('path_lower', 'in', lowers)
      .execute()
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('files').where('id', '=', id).execute()
  }

  async deleteMany(ids: number[]): Promise<void> {
    await this.db.deleteFrom('files').where('id', 'in', ids).execute()
  }

  /** The client's own modification time of a file or folder (epoch ms). */
  async setProvidedMtime(id: number, providedMtime: number): Promise<void> {
    await this.db.updateTable('files').set({ provided_mtime: providedMtime }).where('id', '=', id).execute()
  }

  /** Rows strictly inside a folder (every depth), via the path_lower range `folder/` … `folder0`. */
  descendants(siteId: number, folderLower: string) {
    const q = this.db.selectFrom('files').where('site_id', '=', siteId)
    return folderLower === '' ? q : q.where(insideFolder(folderLower, this.dialect))
  }

  /** Whether anything lies inside a folder. */
  async hasDescendants(siteId: number, folderLower: string): Promise<boolean> {
    const one = await this.descendants(siteId, folderLower).select('id').limit(1).executeTakeFirst()
    return one !== undefined
  }

  /**
   * Serialises writers of a path inside a transaction: an exclusive lock on the path and a shared
   * one on every folder above it, so a change inside a folder and the deletion or move of that
   * folder wait for each other while two uploads into one folder do not. Transaction-level
   * advisory locks where the database has them (PostgreSQL); SQLite runs one write transaction at
   * a time anyway. Only on a repository bound to a transaction.
   */
  async lockPath(siteId: number, path: string): Promise<void> {
    await this.lockPaths(siteId, [path])
  }

  /**
   * Locks several paths (and their folders) at once, always in one global order, so two
   * operations over the same paths (a move from a to b and one from b to a) cannot deadlock.
   */
  async lockPaths(siteId: number, paths: string[]): Promise<void> {
    const lock = this.dialect.advisoryLock
    if (lock === null) return
    const modes = new Map<string, 'shared' | 'exclusive'>()
    for (const path of paths) {
      const parts = path.toLowerCase().split('/')
      for (let i = 1; i < parts.length; i++) {
        const folder = parts.slice(0, i).join('/')
        if (!modes.has(folder)) modes.set(folder, 'shared')
      }
      modes.set(parts.join('/'), 'exclusive')
    }
    const locks = [...modes].map(([p, mode]) => ({ key: lockKey(siteId, p), mode }))
    locks.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    for (const { key, mode } of locks) await lock(key, mode).execute(this.db)
  }

  async insertMany(rows: Insertable<FilesTable>[]): Promise<void> {
    await this.db.insertInto('files').values(rows).execute()
  }

  insert(row: Insertable<FilesTable>): Promise<FileRow> {
    return this.db.insertInto('files').values(row).returningAll().executeTakeFirstOrThrow()
  }

  async update(id: number, set: Updateable<FilesTable>): Promise<void> {
    await this.db.updateTable('files').set(set).where('id', '=', id).execute()
  }

  updateReturning(id: number, set: Updateable<FilesTable>): Promise<FileRow> {
    return this.db.updateTable('files').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
  }

  /**
   * Makes sure every folder above `path` exists. Missing folders are created (each recorded as a
   * `create` Action) when `create` is true, else 422 destination-parent-does-not-exist; a file
   * where a folder should be is 422 destination-parent-conflict. In a transaction.
   */
  async ensureParents(
    ctx: ActionContext,
    author: Author,
    path: string,
    now: number,
    create: boolean,
  ): Promise<void> {
    const parts = path.split('/')
    for (let i = 1; i < parts.length; i++) {
      const folder = parts.slice(0, i).join('/')
      const existing = await this.findByPath(ctx.siteId, folder)
      if (existing) {
        if (existing.type !== 'directory') {
          throw ERRORS.destinationParentConflict(`${existing.path} is a file, so it cannot hold ${path}`)
        }
        continue
      }
      if (!create) {
        throw ERRORS.destinationParentDoesNotExist(
          `The folder ${folder} does not exist (send mkdir_parents=true to create it)`,
        )
      }
      await this.insertFolder(ctx, author, folder, now)
    }
  }

  /**
   * Inserts one folder row and records its `create` Action; a concurrent twin is tolerated. In a
   * transaction.
   */
  async insertFolder(ctx: ActionContext, author: Author, path: string, now: number): Promise<FileRow> {
    const inserted = await this.db
      .insertInto('files')
      .values({
        site_id: ctx.siteId,
        path,
        path_lower: path.toLowerCase(),
        parent_lower: parentOf(path).toLowerCase(),
        name: nameOf(path),
        type: 'directory',
        size: 0,
        custom_metadata: '{}',
        created_at: now,
        mtime: now,
        created_by_id: author.userId,
        created_by_api_key_id: author.apiKeyId,
        last_modified_by_id: author.userId,
        last_modified_by_api_key_id: author.apiKeyId,
      })
      // No conflict target: on PostgreSQL uniqueness is an index on md5(path_lower).
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst()
    if (!inserted) {
      const row = await this.findByPath(ctx.siteId, path)
      if (row?.type !== 'directory') {
        throw ERRORS.destinationParentConflict(`${path} is a file, not a folder`)
      }
      return row
    }
    await recordAction(
      this.db,
      ctx,
      {
        action: 'create',
        display: describeFileAction('create', path, 'directory'),
        path,
        targets: fileTargets(inserted),
      },
      now,
    )
    return inserted
  }
}

/**
 * `path_lower` lies strictly inside the folder: the range `folder/` … `folder0` ('0' follows
 * '/'). Where only a prefix of the path is range-indexed (PostgreSQL, migration 003: a whole path
 * may be too long for a B-tree) the same range is also stated on that prefix, for the index.
 */
export function insideFolder(folderLower: string, dialect: SqlDialect): Expression<SqlBool> {
  const lo = `${folderLower}/`
  const hi = `${folderLower}0`
  const exact = sql<SqlBool>`path_lower > ${lo} and path_lower < ${hi}`
  const length = dialect.pathIndexPrefix
  if (length === null) return exact
  const cut = (v: string) => [...v].slice(0, length).join('')
  return sql<SqlBool>`substr(path_lower, 1, ${sql.lit(length)}) >= ${cut(lo)} and substr(path_lower, 1, ${sql.lit(length)}) <= ${cut(hi)} and ${exact}`
}

/** A signed 64-bit advisory-lock key for a site's path (as a decimal string, for pg's int8). */
function lockKey(siteId: number, pathLower: string): string {
  const digest = crypto.createHash('sha256').update(`${siteId}:${pathLower}`).digest()
  return digest.readBigInt64BE(0).toString()
}

// The blob deletion queue's statements live beside the janitor that reads it (blobs/), for the
// background workers below this floor to share them; they run on the connection they are given.
export {
  queueBlobDeletion,
  queueBlobDeletions,
  queueNewBlob,
  requeueBlobs,
  unqueueBlobKey,
  unqueueBlobs,
} from '../../blobs/blob-garbage.js'

/**
 * The `targets` of a file Action: the file or folder it concerns. Webhooks read the kind from
 * here (a `create` of a folder is the "Create Folder" operation).
 */
export function fileTargets(row: Pick<FileRow, 'id' | 'type' | 'name'>) {
  return [{ type: row.type === 'directory' ? 'folder' : 'file', id: row.id, name: row.name }]
}
