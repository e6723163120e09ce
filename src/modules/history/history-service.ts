import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import type { ListField, ListRequest, ListSpec, Page } from '../../api/list-spec.js'
import { normalizePath } from '../../api/paths.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { ActionTarget } from '../actions/action-recorder.js'
import type { FileAccess } from '../files/file-access.js'
import { type DisplayMode, describeFileAction, type FileActionType } from '../files/file-display.js'
import { readListRequest } from '../list-request.js'
import type { ActionRow, HistoryRepository, HistoryWindow } from './history-repository.js'

/** The /history endpoints show actions of the last 24 hours (api-spec.md, Limits). */
export const HISTORY_WINDOW_MS = 24 * 60 * 60 * 1000

/** The Action resource as the API shows it. */
export interface ActionJson {
  id: number
  path: string
  when: string
  destination: string | null
  display: string
  ip: string | null
  source: string | null
  targets: ActionTarget[]
  user_id: number | null
  username: string | null
  action: string
  failure_type: string | null
  interface: string | null
  /** Files.com field (the SDK's History model); Wharf has no parent sites. */
  user_is_from_parent_site: false
}

const userIdSort: ListField = { column: 'actions.user_id', type: 'integer', nullsAs: 0 }
const createdAtSort: ListField = { column: 'actions.created_at', type: 'datetime' }
const newestFirst = { field: 'created_at', dir: 'desc' } as const

const narrowList = (name: string): ListSpec => ({
  name,
  idColumn: 'actions.id',
  sort: { user_id: userIdSort, created_at: createdAtSort },
  filter: {},
  defaultSort: newestFirst,
})

export const FILE_HISTORY = narrowList('history-files')
export const FOLDER_HISTORY = narrowList('history-folders')
export const USER_HISTORY = narrowList('history-users')
export const LOGIN_HISTORY = narrowList('history-login')
export const HISTORY: ListSpec = {
  name: 'history',
  idColumn: 'actions.id',
  sort: {
    path: { column: 'actions.path', type: 'string' },
    folder: { column: 'actions.folder', type: 'string' },
    user_id: userIdSort,
    created_at: createdAtSort,
  },
  filter: {
    user_id: { column: 'actions.user_id', type: 'integer' },
    folder: { column: 'actions.folder', type: 'string' },
    path: { column: 'actions.path', type: 'string' },
  },
  defaultSort: newestFirst,
}

type Row = ActionRow

const FILE_ACTIONS = new Set<string>(['create', 'read', 'update', 'destroy', 'move', 'copy'])
/** `display` values: '' (blank: names only), full (whole paths), parent. */
export const DISPLAY_VALUES = ['', 'full', 'parent'] as const
const DISPLAY_MODES = new Set<string>(DISPLAY_VALUES)

/** One fixed object shape per row, built without intermediate objects: pages hold 1,000 rows. */
function toActionJson(r: Row, mode: DisplayMode): ActionJson {
  const targets = JSON.parse(r.targets) as ActionTarget[]
  let display = r.display
  const kind = targets[0]?.type
  // `update` also records changes to site settings (target webhook_settings): only file and
  // folder actions have paths to rebuild the text from.
  if (mode !== '' && FILE_ACTIONS.has(r.action) && (kind === 'file' || kind === 'folder')) {
    display = describeFileAction(
      r.action as FileActionType,
      r.path,
      kind === 'folder' ? 'directory' : 'file',
      { source: r.source, destination: r.destination, mode },
    )
  }
  return {
    id: r.id,
    path: r.path,
    when: formatDateTime(r.created_at)!,
    destination: r.destination,
    display,
    ip: r.ip,
    source: r.source,
    targets,
    user_id: r.user_id,
    username: r.username,
    action: r.action,
    failure_type: r.failure_type,
    interface: r.interface,
    user_is_from_parent_site: false,
  }
}

/**
 * GET /history…: the actions of the last 24 hours (older ones stay stored for exports), newest
 * first unless `sort_by` says otherwise. File and folder history is open to whoever may read (or
 * see the history of) the path; the other three lists are for site administrators.
 */
export class HistoryService {
  constructor(
    private readonly history: HistoryRepository,
    private readonly fileAccess: FileAccess,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Actions whose path is the file's: its creation (or the move or copy that brought it there) and
   * everything done to it since. A move or copy away from it is listed under the new path (see
   * docs/decisions.md, "History").
   */
  async forFile(p: Principal, rawPath: string, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    const path = normalizePath(rawPath)
    if (path === '') throw ERRORS.requestParamsRequired('path is required')
    ;(await this.fileAccess.of(p)).requireAny(path, ['read', 'history'])
    const key = this.history.pathKey(path)
    return this.page(p, FILE_HISTORY, query, { path: key }, (site, window, list) =>
      this.history.file(site, key, window, list),
    )
  }

  /** Actions on the folder and on anything inside it; the root folder ('') is the whole site. */
  async forFolder(p: Principal, rawPath: string, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    const path = normalizePath(rawPath)
    ;(await this.fileAccess.of(p)).requireAny(path, ['read', 'history'])
    const key = this.history.pathKey(path)
    return this.page(p, FOLDER_HISTORY, query, { path: key }, (site, window, list) =>
      this.history.folder(site, key, window, list),
    )
  }

  async forUser(p: Principal, userId: number, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, USER_HISTORY, query, { user_id: userId }, (site, window, list) =>
      this.history.user(site, userId, window, list),
    )
  }

  async logins(p: Principal, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, LOGIN_HISTORY, query, {}, (site, window, list) =>
      this.history.logins(site, window, list),
    )
  }

  async list(p: Principal, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, HISTORY, query, {}, (site, window, list) => this.history.all(site, window, list))
  }

  private async page(
    p: Principal,
    spec: ListSpec,
    query: Record<string, unknown>,
    bound: Record<string, unknown>,
    select: (siteId: number, window: HistoryWindow, list: ListRequest) => Promise<Page<Row>>,
  ): Promise<Page<ActionJson>> {
    const mode = displayMode(query['display'])
    const { from, until } = timeRange(query)
    const list = await readListRequest(this.secrets, p.siteId, spec, query, { ...bound, from, until })
    const since = this.now() - HISTORY_WINDOW_MS
    const page = await select(p.siteId, { since: from === null ? since : Math.max(since, from), until }, list)
    const items = new Array<ActionJson>(page.items.length)
    for (let i = 0; i < items.length; i++) items[i] = toActionJson(page.items[i]!, mode)
    return { items, next: page.next, prev: page.prev }
  }
}

function displayMode(raw: unknown): DisplayMode {
  const mode = raw ?? ''
  if (typeof mode !== 'string' || !DISPLAY_MODES.has(mode)) {
    throw ERRORS.requestParamsInvalid('display must be blank, full or parent')
  }
  return mode as DisplayMode
}

/**
 * start_at and end_at compare at the seconds precision `when` is shown with: end_at keeps the
 * actions of the second it names, start_at those from the start of its second.
 */
function timeRange(query: Record<string, unknown>): { from: number | null; until: number | null } {
  const at = (field: string) => {
    const raw = query[field]
    if (raw === undefined || raw === '') return null
    return Math.floor(parseDateTime(raw, field) / 1000) * 1000
  }
  const from = at('start_at')
  const end = at('end_at')
  return { from, until: end === null ? null : end + 1000 }
}
