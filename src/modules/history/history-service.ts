import { type Kysely, type Selectable, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { toPage } from '../../api/list-cursor.js'
import { parseListQuery } from '../../api/list-query.js'
import type { ListField, ListSpec, Page } from '../../api/list-spec.js'
import { applyListQuery } from '../../db/list-sql.js'
import type { ActionsTable, Database } from '../../db/schema.js'
import type { ActionTarget } from '../actions/action-recorder.js'
import { type Principal, requireSiteAdmin } from '../auth/principal.js'
import type { FileAccess } from '../files/file-access.js'
import { type DisplayMode, describeFileAction, type FileActionType } from '../files/file-display.js'
import { normalizePath } from '../paths.js'
import type { SiteSecrets } from '../sites/site-secrets.js'

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
/**
 * Without statistics SQLite walks the time index to spare itself a sort, through the whole day,
 * even for a path with a handful of actions (and a cursor's time bounds draw it there too).
 * Sorting and paging by `+created_at`, an expression no index offers, keeps it on the path index,
 * where the cost is the path's own actions. (On PostgreSQL actions_site_path is a hash index on
 * lower(path), 5000-character paths being too long for a B-tree: a file's actions are found
 * through it, a folder's by reading the day's actions.)
 */
const unindexedTime = sql<number>`+actions.created_at`
const byPathOnSqlite = (spec: ListSpec): ListSpec => ({
  ...spec,
  sort: { ...spec.sort, created_at: { ...createdAtSort, expression: unindexedTime } },
})
const FILE_HISTORY_SQLITE = byPathOnSqlite(FILE_HISTORY)
const FOLDER_HISTORY_SQLITE = byPathOnSqlite(FOLDER_HISTORY)
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

const COLUMNS = [
  'id',
  'created_at',
  'user_id',
  'username',
  'action',
  'path',
  'folder',
  'source',
  'destination',
  'display',
  'ip',
  'interface',
  'failure_type',
  'targets',
] as const

type ActionQuery = SelectQueryBuilder<Database, 'actions', any>
type Row = Omit<Selectable<ActionsTable>, 'site_id'>

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
    private readonly db: Kysely<Database>,
    private readonly dialect: 'sqlite' | 'postgres',
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
    const key = this.lower(path)
    const spec = this.dialect === 'sqlite' ? FILE_HISTORY_SQLITE : FILE_HISTORY
    return this.page(p, spec, query, { path: key }, (q) => q.where(sql`lower(path)`, '=', key))
  }

  /** Actions on the folder and on anything inside it; the root folder ('') is the whole site. */
  async forFolder(p: Principal, rawPath: string, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    const path = normalizePath(rawPath)
    ;(await this.fileAccess.of(p)).requireAny(path, ['read', 'history'])
    const key = this.lower(path)
    if (key === '') return this.page(p, FOLDER_HISTORY, query, { path: key }, (q) => q)
    if (this.dialect === 'postgres')
      return this.page(p, FOLDER_HISTORY, query, { path: key }, (q) => q.where(inFolderPg(key)))
    return this.page(p, FOLDER_HISTORY_SQLITE, query, { path: key }, (q) => q.where(inFolder(key)), true)
  }

  async forUser(p: Principal, userId: number, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, USER_HISTORY, query, { user_id: userId }, (q) => q.where('user_id', '=', userId))
  }

  async logins(p: Principal, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, LOGIN_HISTORY, query, {}, (q) => q.where('action', 'in', ['login', 'failedlogin']))
  }

  async list(p: Principal, query: Record<string, unknown>): Promise<Page<ActionJson>> {
    requireSiteAdmin(p)
    return this.page(p, HISTORY, query, {}, (q) => q)
  }

  private async page(
    p: Principal,
    spec: ListSpec,
    query: Record<string, unknown>,
    bound: Record<string, unknown>,
    narrow: (q: ActionQuery) => ActionQuery,
    /** The window, too, is on `+created_at` (SQLite folder history: a range of paths). */
    unindexed = false,
  ): Promise<Page<ActionJson>> {
    const mode = displayMode(query['display'])
    const { from, until } = timeRange(query)
    const secret = await this.secrets.signingSecret(p.siteId)
    const lq = parseListQuery(spec, query, secret, { ...bound, from, until })
    const since = this.now() - HISTORY_WINDOW_MS
    const at = unindexed ? unindexedTime : sql.ref<number>('actions.created_at')
    let q = this.db
      .selectFrom('actions')
      .select(COLUMNS)
      .where('site_id', '=', p.siteId)
      .where(at, '>=', from === null ? since : Math.max(since, from))
    if (until !== null) q = q.where(at, '<', until)
    const rows = (await applyListQuery(narrow(q), spec, lq).execute()) as Row[]
    const page = toPage(rows, spec, lq, secret)
    const items = new Array<ActionJson>(page.items.length)
    for (let i = 0; i < items.length; i++) items[i] = toActionJson(page.items[i]!, mode)
    return { items, next: page.next, prev: page.prev }
  }

  /** The case folding of the database's lower(): SQLite folds only ASCII letters. */
  private lower(s: string): string {
    return this.dialect === 'sqlite' ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s.toLowerCase()
  }
}

/**
 * `lower(path)` is the folder or starts with 'f/'. On SQLite the index actions_site_path serves
 * the range from 'f' to 'f0' ('0' follows '/'); the second test drops what else the range holds:
 * siblings such as 'f.txt' or 'f-old/…', and, under a linguistic PostgreSQL collation, names that
 * sort between '/' and '0' only there. One range rather than an OR of two, which SQLite would not
 * take to the index.
 */
function inFolder(key: string) {
  const prefix = `${key}/`
  return sql<SqlBool>`(lower(path) >= ${key} and lower(path) < ${`${key}0`} and (lower(path) = ${key} or substr(lower(path), 1, ${[...prefix].length}) = ${prefix}))`
}

/**
 * The same on PostgreSQL, where the path index is a hash (a B-tree cannot hold a 5000-character
 * path): the range goes on the indexed first 500 characters, compared in byte order whatever the
 * database's collation (migration 003, actions_site_path_prefix).
 */
function inFolderPg(key: string) {
  const prefix = `${key}/`
  const cut = (v: string) => [...v].slice(0, 500).join('')
  const indexed = sql`(substr(lower(path), 1, 500) collate "C")`
  return sql<SqlBool>`(${indexed} >= ${cut(key)} and ${indexed} <= ${cut(`${key}0`)} and (lower(path) = ${key} or substr(lower(path), 1, ${[...prefix].length}) = ${prefix}))`
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
