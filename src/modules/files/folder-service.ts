import { parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { normalizePath } from '../../api/paths.js'
import type { Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { contextOf } from '../actions/action-recorder.js'
import type { FolderRules } from '../behaviors/folder-rules.js'
import { readListRequest } from '../list-request.js'
import type { AccessView, FileAccess } from './file-access.js'
import { type FileJson, toFileJson } from './file-json.js'
import type { FileRow } from './file-repository.js'
import type { FileTreeRepositories } from './folder-repository.js'
import { listableRegions, visibleChildren } from './folder-visibility.js'
import { authorOf, normalizeNewPath } from './new-paths.js'

export const FOLDER_LIST: ListSpec = {
  name: 'folders',
  idColumn: 'files.id',
  sort: {
    path: { column: 'files.path_lower', type: 'string' },
    size: { column: 'files.size', type: 'integer' },
    modified_at_datetime: { column: 'files.mtime', type: 'datetime' },
    provided_modified_at: { column: 'files.provided_mtime', type: 'datetime', nullsAs: 0 },
  },
  filter: {},
  defaultSort: { field: 'path', dir: 'asc' },
}

export interface FolderListQuery extends Record<string, unknown> {
  search?: string
  search_all?: boolean
  type?: 'file' | 'folder'
  modified_at_datetime?: string
}

export interface MkdirInput {
  mkdir_parents?: boolean | null
  provided_mtime?: string | null
}

/** Listing folders (GET /folders/{path}) and creating them (POST /folders/{path}). */
export class FolderService {
  constructor(
    private readonly repos: FileTreeRepositories,
    private readonly fileAccess: FileAccess,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
    /** The locks (lock_subfolders) on where folders are created. */
    private readonly folderRules?: FolderRules,
  ) {}

  /**
   * The direct children of a folder or, with `search`, every file and folder inside it (the whole
   * site with `search_all`) whose name contains the text. A caller without `list` on the folder
   * sees only what leads to their own permissions (folder-visibility.ts); a search by such a caller
   * looks only inside the folders they may list.
   */
  async list(p: Principal, rawPath: string, query: FolderListQuery): Promise<Page<FileJson>> {
    const access = await this.fileAccess.of(p)
    return mapPage(await this.listRows(p, rawPath, query, access), (r) => toFileJson(r, access))
  }

  /** `list` for every front end: the rows. `access` is the caller's, when already read. */
  async listRows(
    p: Principal,
    rawPath: string,
    query: FolderListQuery,
    access?: AccessView,
  ): Promise<Page<FileRow>> {
    const path = normalizePath(rawPath, 'path')
    const search = query.search ?? ''
    const searchAll = query.search_all === true
    if (searchAll && path !== '') {
      throw ERRORS.searchAllOnChildPath('search_all searches the whole site: list the root folder to use it')
    }
    let modifiedAfter: number | null = null
    if (query.modified_at_datetime !== undefined && query.modified_at_datetime !== '') {
      if (query.type === undefined) {
        throw ERRORS.requestParamsInvalid('modified_at_datetime can only be used together with type')
      }
      modifiedAfter = parseDateTime(query.modified_at_datetime, 'modified_at_datetime')
    }

    access ??= await this.fileAccess.of(p)
    const full = access.can(path, 'list')
    if (!full && !access.leadsTo(path)) access.require(path, 'list')
    if (path !== '') {
      const folder = await this.repos.files.findByPath(p.siteId, path)
      if (!folder) throw ERRORS.folderNotFound(`Folder ${path} not found`)
      if (folder.type !== 'directory') {
        throw ERRORS.folderMustNotBeAFile(`${folder.path} is a file, not a folder`)
      }
    }

    const list = await readListRequest(this.secrets, p.siteId, FOLDER_LIST, query, {
      path: path.toLowerCase(),
      search,
      searchAll,
      type: query.type ?? null,
      modifiedAfter,
    })

    const pathLower = path.toLowerCase()
    const scope = searchAll ? '' : pathLower
    let regions: string[] | undefined
    let children: string[] | undefined
    if (search !== '') {
      if (!access.can(scope, 'list')) {
        regions = listableRegions(access, scope)
        if (regions.length === 0) return { items: [], next: null, prev: null }
      }
    } else if (!full) {
      children = visibleChildren(access, path)
      if (children.length === 0) return { items: [], next: null, prev: null }
    }
    const type = query.type === undefined ? undefined : query.type === 'folder' ? 'directory' : 'file'
    const listing = { search, pathLower, scope, regions, children, type, modifiedAfter } as const
    return this.repos.folders.page(p.siteId, listing, list)
  }

  /**
   * Creates a folder. Its parents must exist unless `mkdir_parents`; an existing file or folder
   * at the path is 422 destination-exists.
   */
  async mkdir(p: Principal, rawPath: string, input: MkdirInput): Promise<FileJson> {
    const access = await this.fileAccess.of(p)
    return toFileJson(await this.createFolder(p, rawPath, input, access), access)
  }

  /** `mkdir` for every front end: the new folder's row. */
  async createFolder(
    p: Principal,
    rawPath: string,
    input: MkdirInput,
    access?: AccessView,
  ): Promise<FileRow> {
    const path = normalizeNewPath(rawPath, 'path')
    const providedMtime =
      input.provided_mtime !== undefined && input.provided_mtime !== null && input.provided_mtime !== ''
        ? parseDateTime(input.provided_mtime, 'provided_mtime')
        : null
    access ??= await this.fileAccess.of(p)
    access.require(path, 'write')
    if (this.folderRules) {
      // The folder and the parents mkdir_parents would create, as they are now.
      const segments = path.split('/')
      const paths = segments.map((_, i) => segments.slice(0, i + 1).join('/'))
      const present = new Set(
        (
          await this.repos.files.kindsAt(
            p.siteId,
            paths.map((x) => x.toLowerCase()),
          )
        ).map((r) => r.path_lower),
      )
      const created = paths.filter((x) => !present.has(x.toLowerCase()))
      await this.folderRules.checkFolderChange(p.siteId, created, access)
    }
    const ctx = contextOf(p)
    const author = authorOf(p)
    const now = this.now()
    return this.repos.files.transaction(async (files) => {
      await files.lockPath(p.siteId, path)
      const existing = await files.findByPath(p.siteId, path)
      if (existing) {
        const kind = existing.type === 'directory' ? 'A folder' : 'A file'
        throw ERRORS.destinationExists(`${kind} already exists at ${existing.path}`)
      }
      await files.ensureParents(ctx, author, path, now, input.mkdir_parents === true)
      const folder = await files.insertFolder(ctx, author, path, now)
      if (providedMtime === null) return folder
      await files.setProvidedMtime(folder.id, providedMtime)
      return { ...folder, provided_mtime: providedMtime }
    })
  }
}
