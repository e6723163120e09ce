import { ERRORS } from '../../api/error-factories.js'
import type { BlobStore } from '../../blobs/blob-store.js'
import { unitOfWork } from '../../db/repository.js'
import type { Principal } from '../../identity/principal.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { FolderRules } from '../behaviors/folder-rules.js'
import type { OperationDeps } from './destination-rules.js'
import type { AccessView, FileAccess } from './file-access.js'
import { type CopyInput, copyPath } from './file-copy.js'
import { describeFileAction } from './file-display.js'
import { type MoveInput, movePath } from './file-move.js'
import { fileTargets, queueBlobDeletion } from './file-repository.js'
import type { FileTreeRepositories } from './folder-repository.js'
import { normalizeExistingPath } from './new-paths.js'

export interface DeleteInput {
  recursive?: boolean
}

/**
 * Deleting, copying and moving files and folders. Every change is one transaction with its one
 * Action; bytes are never deleted inline but queued in blob_garbage for the janitor.
 */
export class FileOperations {
  private readonly deps: OperationDeps & { blobs: BlobStore; fileAccess: FileAccess }

  constructor(
    private readonly repos: FileTreeRepositories,
    blobs: BlobStore,
    private readonly fileAccess: FileAccess,
    private readonly folderRules: FolderRules,
    private readonly now: () => number = Date.now,
  ) {
    this.deps = { repos, blobs, fileAccess, folderRules, now }
  }

  /** DELETE /files/{path}. */
  async delete(p: Principal, rawPath: string, input: DeleteInput): Promise<void> {
    const path = normalizeExistingPath(rawPath)
    const access = await this.fileAccess.of(p)
    access.require(path, 'delete')
    await this.remove(p, path, input.recursive === true, access)
  }

  /** DELETE /resource/{id}: the same, for the file or folder with this id. */
  async deleteById(p: Principal, id: number, input: DeleteInput): Promise<void> {
    const row = await this.repos.files.findById(p.siteId, id)
    if (!row) throw ERRORS.fileNotFound(`No file or folder has the id ${id}`)
    const access = await this.fileAccess.of(p)
    access.require(row.path, 'delete')
    await this.remove(p, row.path, input.recursive === true, access, id)
  }

  copy(p: Principal, rawPath: string, input: CopyInput): Promise<void> {
    return copyPath(this.deps, p, rawPath, input)
  }

  move(p: Principal, rawPath: string, input: MoveInput): Promise<void> {
    return movePath(this.deps, p, rawPath, input)
  }

  /**
   * Sets the client's own modification time (`provided_mtime`, epoch ms) of a file or folder, as
   * sync clients do after an upload (SFTP SETSTAT, FTP MFMT, WebDAV PROPPATCH). It needs write
   * permission on the path, like an upload. Only metadata changes: no Action and no webhook,
   * so the Upload that came before is the one change a listener hears of.
   */
  async setProvidedMtime(p: Principal, rawPath: string, providedMtime: number): Promise<void> {
    const path = normalizeExistingPath(rawPath)
    const access = await this.fileAccess.of(p)
    access.require(path, 'write')
    if (!Number.isSafeInteger(providedMtime)) throw ERRORS.badRequest('The modification time is out of range')
    const row = await this.repos.files.findByPath(p.siteId, path)
    if (!row) throw ERRORS.fileNotFound(`${path} not found`)
    await this.repos.files.setProvidedMtime(row.id, providedMtime)
  }

  /**
   * Deletes a file, or a folder with (when `recursive`) everything inside it, in one transaction.
   * Only the named path gets a `destroy` Action: one Action per deleted descendant would make a
   * large recursive delete one huge transaction, and the history of a folder already covers
   * everything inside it. The blobs of every deleted file are queued by one INSERT … SELECT, so
   * the number of files inside does not change the number of statements.
   */
  private async remove(
    p: Principal,
    path: string,
    recursive: boolean,
    access: AccessView,
    expectedId?: number,
  ): Promise<void> {
    const siteId = p.siteId
    // A folder's lock (lock_subfolders) is read before the transaction, whose connection is the
    // only one on SQLite; a file is not concerned.
    const before = await this.repos.files.findByPath(siteId, path)
    if (before?.type === 'directory') await this.folderRules.checkFolderChange(siteId, [path], access)
    const now = this.now()
    await unitOfWork(this.repos, async (tx) => {
      await tx.files.lockPath(siteId, path)
      const row = await tx.files.findByPath(siteId, path)
      if (!row || (expectedId !== undefined && row.id !== expectedId)) {
        throw ERRORS.fileNotFound(`${path} not found`)
      }
      if (row.type === 'directory') {
        const inside = await tx.files.hasDescendants(siteId, row.path_lower)
        if (inside && !recursive) {
          throw ERRORS.folderNotEmpty(
            `${row.path} is not empty (send recursive=true to delete it with its contents)`,
          )
        }
        if (inside) {
          await tx.folders.deleteInside(siteId, row.path_lower, now)
        }
      } else if (row.blob_key) {
        await queueBlobDeletion(tx.db, row.blob_key, now)
      }
      await tx.files.delete(row.id)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'destroy',
          display: describeFileAction('destroy', row.path, row.type),
          path: row.path,
          targets: fileTargets(row),
        },
        now,
      )
    })
  }
}
