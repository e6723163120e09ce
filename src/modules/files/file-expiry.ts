import { setImmediate as nextTurn } from 'node:timers/promises'
import { type Expression, type SqlBool, sql } from 'kysely'
import { unitOfWork } from '../../db/repository.js'
import { type ActionContext, recordAction, recordActions } from '../actions/action-recorder.js'
import type { ExpiryScope, RetentionDeletions } from '../behaviors/file-expiration.js'
import { describeFileAction } from './file-display.js'
import { fileTargets, insideFolder, queueBlobDeletions } from './file-repository.js'
import type { FileTreeRepositories } from './folder-repository.js'

/** A file the retention found expired, as it was when read. */
export interface Candidate {
  id: number
  path: string
  path_lower: string
}

/**
 * What a batch locks: the folders its files lie in, exclusively (with shared locks above them), so
 * that every change inside them (an upload, a move or a delete, which hold a shared lock on their
 * folder) waits for the batch or goes first: a lock per folder rather than per file. Files in the
 * root have no folder lock to meet and are locked one by one.
 */
function lockedFor(files: Candidate[]): string[] {
  const paths = new Set<string>()
  for (const f of files) {
    const slash = f.path.lastIndexOf('/')
    paths.add(slash < 0 ? f.path : f.path.slice(0, slash))
  }
  return [...paths]
}

/**
 * The file core's deletion of files past a retention rule (file_expiration behaviors): the same
 * deletion as `DELETE /files/{path}`, batched. Each batch is one transaction that takes the
 * locks of their folders (so an upload, move or delete there waits or goes first), reads the files
 * again, deletes only those still at the path read and still older than the cutoff (a file
 * replaced meanwhile is kept), queues their blobs for the janitor and records one `destroy`
 * Action per file, with its webhook notification. A crash loses nothing and doubles nothing: a
 * batch is all there or not at all, and the next pass finds what is left.
 */
export class FileExpiry implements RetentionDeletions {
  constructor(
    private readonly repos: FileTreeRepositories,
    /** Who the Actions name: the site's retention, not a user. */
    private readonly actor: (siteId: number) => ActionContext,
  ) {}

  /** Up to `limit` expired files of the scope: what one batch deletes. */
  async expiredFiles(scope: ExpiryScope, limit: number): Promise<Candidate[]> {
    return this.repos.files.db
      .selectFrom('files')
      .select(['id', 'path', 'path_lower'])
      .where('site_id', '=', scope.siteId)
      .where('type', '=', 'file')
      .where('mtime', '<', scope.cutoff)
      .where(this.within(scope, false))
      .limit(limit)
      .execute()
  }

  /** Deletes the files read by `expiredFiles` that are still expired; returns how many went. */
  async deleteFiles(scope: ExpiryScope, files: Candidate[], now: number): Promise<number> {
    if (files.length === 0) return 0
    const ctx = this.actor(scope.siteId)
    return unitOfWork(this.repos, async (tx) => {
      await tx.files.lockPaths(scope.siteId, lockedFor(files))
      const seen = new Map(files.map((f) => [f.id, f.path_lower]))
      // Under the locks: a file moved away (its id elsewhere) or replaced (newer) stays.
      const still = (
        await tx.db
          .selectFrom('files')
          .select(['id', 'path', 'path_lower', 'name', 'type', 'blob_key'])
          .where('id', 'in', [...seen.keys()])
          .where('type', '=', 'file')
          .where('mtime', '<', scope.cutoff)
          .execute()
      ).filter((r) => seen.get(r.id) === r.path_lower)
      if (still.length === 0) return 0
      await tx.files.deleteMany(still.map((r) => r.id))
      await queueBlobDeletions(
        tx.db,
        still.flatMap((r) => (r.blob_key ? [r.blob_key] : [])),
        now,
      )
      await recordActions(
        tx.db,
        ctx,
        still.map((row) => ({
          action: 'destroy' as const,
          display: describeFileAction('destroy', row.path, 'file'),
          path: row.path,
          targets: fileTargets(row),
        })),
        now,
      )
      return still.length
    })
  }

  /**
   * Deletes the empty folders strictly inside a recursive scope that were made before its cutoff
   * (never the rule's own folder, nor one with an upload in progress inside it), deepest first,
   * until none is left: a folder emptied by deleting its only subfolder goes too. Each folder is
   * its own transaction with its `destroy` Action. Returns how many went.
   */
  async deleteEmptyFolders(
    scope: ExpiryScope,
    limit: number,
    now: number,
    go: () => boolean,
  ): Promise<number> {
    if (!scope.recursive) return 0
    let removed = 0
    for (;;) {
      const folders = await this.repos.files.db
        .selectFrom('files as f')
        .select(['f.id', 'f.path', 'f.path_lower'])
        .where('f.site_id', '=', scope.siteId)
        .where('f.type', '=', 'directory')
        .where('f.mtime', '<', scope.cutoff)
        .where(this.within(scope, true))
        .where(this.emptyAndIdle(scope.siteId, 'f'))
        .orderBy(sql`length(f.path_lower)`, 'desc')
        .limit(limit)
        .execute()
      let round = 0
      for (const folder of folders) {
        if (!go()) return removed
        if (await this.deleteFolder(scope.siteId, folder, now)) round++
        await nextTurn()
      }
      removed += round
      if (round === 0 || folders.length === 0) return removed
    }
  }

  private async deleteFolder(siteId: number, folder: Candidate, now: number): Promise<boolean> {
    return unitOfWork(this.repos, async (tx) => {
      await tx.files.lockPath(siteId, folder.path)
      const gone = await tx.db
        .deleteFrom('files')
        .where('id', '=', folder.id)
        .where('path_lower', '=', folder.path_lower)
        .where('type', '=', 'directory')
        .where(this.emptyAndIdle(siteId, 'files'))
        .returning(['id', 'path', 'name', 'type'])
        .executeTakeFirst()
      if (!gone) return false
      await recordAction(
        tx.db,
        this.actor(siteId),
        {
          action: 'destroy',
          display: describeFileAction('destroy', gone.path, 'directory'),
          path: gone.path,
          targets: fileTargets(gone),
        },
        now,
      )
      return true
    })
  }

  /** The folder (the row of `table`) holds nothing and no upload in progress writes into it. */
  private emptyAndIdle(siteId: number, table: 'f' | 'files'): Expression<SqlBool> {
    const folder = sql.ref(`${table}.path_lower`)
    return sql<SqlBool>`not exists (select 1 from files c where c.site_id = ${siteId} and c.parent_lower = ${folder})
      and not exists (select 1 from uploads u where u.site_id = ${siteId}
        and substr(lower(u.path), 1, length(${folder}) + 1) = ${folder} || '/')`
  }

  /**
   * The rows a scope covers: the files directly in its folder, or (recursive) everything inside
   * it; never what lies at or below an excluded folder. `folders`: for folders, always strictly
   * inside (a folder's row sits in its parent's scope, the rule's own folder is not its own).
   */
  private within(scope: ExpiryScope, folders: boolean): Expression<SqlBool> {
    const dialect = this.repos.files.dialect
    const parts: Expression<SqlBool>[] = []
    if (!scope.recursive) parts.push(sql<SqlBool>`parent_lower = ${scope.folderLower}`)
    else if (scope.folderLower !== '') parts.push(insideFolder(scope.folderLower, dialect))
    else if (folders) parts.push(sql<SqlBool>`path_lower <> ''`)
    for (const ex of scope.excluded) {
      parts.push(sql<SqlBool>`not (path_lower = ${ex} or (${insideFolder(ex, dialect)}))`)
    }
    if (parts.length === 0) return sql<SqlBool>`1 = 1`
    return sql<SqlBool>`${sql.join(parts, sql` and `)}`
  }
}
