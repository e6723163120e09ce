import { type Kysely, type Selectable, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { ListRequest, ListSpec, Page } from '../../api/list-spec.js'
import type { SqlDialect } from '../../db/dialects/dialect.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { ActionsTable, Database } from '../../db/schema.js'

export type ActionRow = Omit<Selectable<ActionsTable>, 'site_id'>

/** The times a history list covers: from `since` (inclusive), until `until` (exclusive) if given. */
export interface HistoryWindow {
  since: number
  until: number | null
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

/**
 * Without statistics SQLite walks the time index to spare itself a sort, through the whole day,
 * even for a path with a handful of actions (and a cursor's time bounds draw it there too).
 * Sorting and paging by `+created_at`, an expression no index offers, keeps it on the path index,
 * where the cost is the path's own actions. (On PostgreSQL actions_site_path is a hash index on
 * lower(path), 5000-character paths being too long for a B-tree: a file's actions are found
 * through it, a folder's by reading the day's actions.)
 */
const unindexedTime = sql<number>`+actions.created_at`

/** The actions table as the /history lists read it (the recorder writes it: action-repository.ts). */
export class HistoryRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new HistoryRepository(db, this.dialect) as this
  }

  /** A path as the database's lower() folds it, to compare with `lower(path)`. */
  pathKey(path: string): string {
    return this.dialect.lowerLike(path)
  }

  /** Actions whose path is `key` (a `pathKey`). */
  file(siteId: number, key: string, window: HistoryWindow, list: ListRequest): Promise<Page<ActionRow>> {
    return this.page(siteId, this.onPathIndex(list), window, false, (q) =>
      q.where(sql`lower(path)`, '=', key),
    )
  }

  /** Actions on the folder `key` (a `pathKey`) and on anything inside it; '' is the whole site. */
  folder(siteId: number, key: string, window: HistoryWindow, list: ListRequest): Promise<Page<ActionRow>> {
    if (key === '') return this.page(siteId, list, window, false, (q) => q)
    const prefix = this.dialect.pathIndexPrefix
    if (prefix !== null) {
      return this.page(siteId, list, window, false, (q) =>
        q.where(inFolderByPrefix(key, prefix, this.dialect)),
      )
    }
    // The window, too, is on `+created_at`: a range of paths is what the index should serve.
    return this.page(siteId, this.onPathIndex(list), window, this.dialect.indexHints, (q) =>
      q.where(inFolder(key)),
    )
  }

  user(siteId: number, userId: number, window: HistoryWindow, list: ListRequest): Promise<Page<ActionRow>> {
    return this.page(siteId, list, window, false, (q) => q.where('user_id', '=', userId))
  }

  logins(siteId: number, window: HistoryWindow, list: ListRequest): Promise<Page<ActionRow>> {
    return this.page(siteId, list, window, false, (q) => q.where('action', 'in', ['login', 'failedlogin']))
  }

  all(siteId: number, window: HistoryWindow, list: ListRequest): Promise<Page<ActionRow>> {
    return this.page(siteId, list, window, false, (q) => q)
  }

  /** Where the planner needs it, the list sorted and paged by `+created_at` (see unindexedTime). */
  private onPathIndex(list: ListRequest): ListRequest {
    const createdAt = list.spec.sort['created_at']
    if (!this.dialect.indexHints || !createdAt) return list
    const spec: ListSpec = {
      ...list.spec,
      sort: { ...list.spec.sort, created_at: { ...createdAt, expression: unindexedTime } },
    }
    return { ...list, spec }
  }

  private page(
    siteId: number,
    list: ListRequest,
    window: HistoryWindow,
    unindexed: boolean,
    narrow: (q: ActionQuery) => ActionQuery,
  ): Promise<Page<ActionRow>> {
    const at = unindexed ? unindexedTime : sql.ref<number>('actions.created_at')
    let q = this.db
      .selectFrom('actions')
      .select(COLUMNS)
      .where('site_id', '=', siteId)
      .where(at, '>=', window.since)
    if (window.until !== null) q = q.where(at, '<', window.until)
    return selectPage(narrow(q), list) as Promise<Page<ActionRow>>
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
 * The same where the path index is a hash (PostgreSQL: a B-tree cannot hold a 5000-character
 * path): the range goes on the indexed first characters, compared in byte order whatever the
 * database's collation (migration 003, actions_site_path_prefix).
 */
function inFolderByPrefix(key: string, length: number, dialect: SqlDialect) {
  const prefix = `${key}/`
  const cut = (v: string) => [...v].slice(0, length).join('')
  const indexed = dialect.byteOrder(sql<string>`substr(lower(path), 1, ${sql.lit(length)})`)
  return sql<SqlBool>`(${indexed} >= ${cut(key)} and ${indexed} <= ${cut(`${key}0`)} and (lower(path) = ${key} or substr(lower(path), 1, ${[...prefix].length}) = ${prefix}))`
}
