import crypto from 'node:crypto'
import {
  type Expression,
  type Insertable,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
  type Transaction,
  type Updateable,
} from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import type { SqlDialect } from '../../db/dialects/dialect.js'
import type { Database, FilesTable } from '../../db/schema.js'
import { type ActionContext, recordAction } from '../actions/action-recorder.js'
import { describeFileAction } from './file-display.js'

/**
 * The files table: one row per file or folder, addressed by path (case-insensitive, stored as
 * given) or by id. Shared by the upload, download and folder services.
 */
export type FileRow = Selectable<FilesTable>
export type Db = Kysely<Database> | Transaction<Database>

/** Who made a change, for the created_by / last_modified_by columns. */
export interface Author {
  userId: number | null
  apiKeyId: number | null
}

export async function findByPath(db: Db, siteId: number, path: string): Promise<FileRow | undefined> {
  return db
    .selectFrom('files')
    .selectAll()
    .where('site_id', '=', siteId)
    .where('path_lower', '=', path.toLowerCase())
    .executeTakeFirst()
}

export async function findById(db: Db, siteId: number, id: number): Promise<FileRow | undefined> {
  return db
    .selectFrom('files')
    .selectAll()
    .where('site_id', '=', siteId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** The rows at these lowercased paths: their spelling and kind, for checks before an upload. */
export async function kindsAt(db: Db, siteId: number, lowers: string[]) {
  return db
    .selectFrom('files')
    .select(['path', 'path_lower', 'type'])
    .where('site_id', '=', siteId)
    .where('path_lower', 'in', lowers)
    .execute()
}

export async function deleteFileRow(db: Db, id: number): Promise<void> {
  await db.deleteFrom('files').where('id', '=', id).execute()
}

export async function deleteFileRows(db: Db, ids: number[]): Promise<void> {
  await db.deleteFrom('files').where('id', 'in', ids).execute()
}

/** The client's own modification time of a file or folder (epoch ms). */
export async function setProvidedMtime(db: Db, id: number, providedMtime: number): Promise<void> {
  await db.updateTable('files').set({ provided_mtime: providedMtime }).where('id', '=', id).execute()
}

/** Rows strictly inside a folder (every depth), via the path_lower range `folder/` … `folder0`. */
export function descendants(db: Db, dialect: SqlDialect, siteId: number, folderLower: string) {
  const q = db.selectFrom('files').where('site_id', '=', siteId)
  return folderLower === '' ? q : q.where(insideFolder(folderLower, dialect))
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

/**
 * Serialises writers of a path inside a transaction: an exclusive lock on the path and a shared
 * one on every folder above it, so a change inside a folder and the deletion or move of that
 * folder wait for each other while two uploads into one folder do not. Transaction-level advisory
 * locks where the database has them (PostgreSQL); SQLite runs one write transaction at a time anyway.
 */
export async function lockPath(
  trx: Transaction<Database>,
  dialect: SqlDialect,
  siteId: number,
  path: string,
): Promise<void> {
  await lockPaths(trx, dialect, siteId, [path])
}

/**
 * Locks several paths (and their folders) at once, always in one global order, so two
 * operations over the same paths (a move from a to b and one from b to a) cannot deadlock.
 */
export async function lockPaths(
  trx: Transaction<Database>,
  dialect: SqlDialect,
  siteId: number,
  paths: string[],
): Promise<void> {
  const lock = dialect.advisoryLock
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
  for (const { key, mode } of locks) await lock(key, mode).execute(trx)
}

/** A signed 64-bit advisory-lock key for a site's path (as a decimal string, for pg's int8). */
function lockKey(siteId: number, pathLower: string): string {
  const digest = crypto.createHash('sha256').update(`${siteId}:${pathLower}`).digest()
  return digest.readBigInt64BE(0).toString()
}

// The blob deletion queue's statements live beside the janitor that reads it (blobs/), for the
// background workers below this floor to share them.
export {
  queueBlobDeletion,
  queueNewBlob,
  requeueBlobs,
  unqueueBlobKey,
  unqueueBlobs,
} from '../../blobs/blob-garbage.js'

import { nameOf, parentOf } from '../../api/paths.js'

export async function insertFileRows(db: Db, rows: Insertable<FilesTable>[]): Promise<void> {
  await db.insertInto('files').values(rows).execute()
}

export function insertFileRow(db: Db, row: Insertable<FilesTable>): Promise<FileRow> {
  return db.insertInto('files').values(row).returningAll().executeTakeFirstOrThrow()
}

export async function updateFileRow(db: Db, id: number, set: Updateable<FilesTable>): Promise<void> {
  await db.updateTable('files').set(set).where('id', '=', id).execute()
}

export function updateFileRowReturning(db: Db, id: number, set: Updateable<FilesTable>): Promise<FileRow> {
  return db.updateTable('files').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/**
 * Makes sure every folder above `path` exists. Missing folders are created (each recorded as a
 * `create` Action) when `create` is true, else 422 destination-parent-does-not-exist; a file
 * where a folder should be is 422 destination-parent-conflict.
 */
export async function ensureParents(
  trx: Transaction<Database>,
  ctx: ActionContext,
  author: Author,
  path: string,
  now: number,
  create: boolean,
): Promise<void> {
  const parts = path.split('/')
  for (let i = 1; i < parts.length; i++) {
    const folder = parts.slice(0, i).join('/')
    const existing = await findByPath(trx, ctx.siteId, folder)
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
    await insertFolder(trx, ctx, author, folder, now)
  }
}

/** Inserts one folder row and records its `create` Action; a concurrent twin is tolerated. */
export async function insertFolder(
  trx: Transaction<Database>,
  ctx: ActionContext,
  author: Author,
  path: string,
  now: number,
): Promise<FileRow> {
  const inserted = await trx
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
    const row = await findByPath(trx, ctx.siteId, path)
    if (row?.type !== 'directory') {
      throw ERRORS.destinationParentConflict(`${path} is a file, not a folder`)
    }
    return row
  }
  await recordAction(
    trx,
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

/**
 * The `targets` of a file Action: the file or folder it concerns. Webhooks read the kind from
 * here (a `create` of a folder is the "Create Folder" operation).
 */
export function fileTargets(row: Pick<FileRow, 'id' | 'type' | 'name'>) {
  return [{ type: row.type === 'directory' ? 'folder' : 'file', id: row.id, name: row.name }]
}
