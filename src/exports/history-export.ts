import type { Kysely } from 'kysely'
import { formatDateTime } from '../api/datetime.js'
import { ERRORS } from '../api/error-factories.js'
import type { DatabaseHandle } from '../db/database.js'
import type { SqlDialect } from '../db/dialects/dialect.js'
import type { Database } from '../db/schema.js'
import type { ExportJob, ExportKindSpec, ExportSource, ParsedQuery } from './export-kind.js'
import { keysetPages } from './keyset-pages.js'
import { asGiven, inFolders, integerValues, pathIn, pathValues, splitValues } from './query-fields.js'

/** History exports (HistoryExport): every stored Action, not only the last 24 hours. */

/** HistoryExportResult, with the Files.com SDK's field names and order. */
export const HISTORY_COLUMNS = [
  'id',
  'created_at',
  'created_at_iso',
  'user_id',
  'file_id',
  'parent_id',
  'path',
  'folder',
  'src',
  'destination',
  'ip',
  'username',
  'user_is_from_parent_site',
  'action',
  'failure_type',
  'interface',
  'target_id',
  'target_name',
  'target_permission',
  'target_recursive',
  'target_expires_at',
  'target_expires_at_iso',
  'target_permission_set',
  'target_platform',
  'target_username',
  'target_user_id',
] as const

/** The query fields Wharf answers. */
const SUPPORTED = [
  'query_action',
  'query_interface',
  'query_user_id',
  'query_path',
  'query_folder',
  'query_src',
  'query_destination',
  'query_ip',
  'query_username',
  'query_failure_type',
] as const

/**
 * Files.com query fields about things Wharf's history does not record (file and folder ids,
 * the details of a target): refused when given, rather than silently matching everything.
 */
export const UNSUPPORTED_HISTORY_FIELDS = [
  'query_file_id',
  'query_parent_id',
  'query_target_id',
  'query_target_name',
  'query_target_permission',
  'query_target_user_id',
  'query_target_username',
  'query_target_platform',
  'query_target_permission_set',
] as const

function parseQuery(body: Record<string, unknown>, dialect: SqlDialect): ParsedQuery {
  for (const field of UNSUPPORTED_HISTORY_FIELDS) {
    if (splitValues(body[field], field).length > 0) {
      throw ERRORS.requestParamsInvalid(
        `${field} is not supported: Wharf's history does not record what it searches`,
      )
    }
  }
  const lowered = (field: string) => splitValues(body[field], field, true).map((v) => v.toLowerCase())
  const actions = lowered('query_action')
  const interfaces = lowered('query_interface')
  const failureTypes = lowered('query_failure_type')
  const userIds = integerValues(body['query_user_id'], 'query_user_id')
  const paths = pathValues(body['query_path'], 'query_path')
  const folders = pathValues(body['query_folder'], 'query_folder')
  const sources = pathValues(body['query_src'], 'query_src')
  const destinations = pathValues(body['query_destination'], 'query_destination')
  const ips = splitValues(body['query_ip'], 'query_ip', true)
  const usernames = splitValues(body['query_username'], 'query_username', true)
  const given: ParsedQuery['given'] = {}
  for (const f of [...SUPPORTED, ...UNSUPPORTED_HISTORY_FIELDS]) given[f] = asGiven(body[f])
  return {
    given,
    folders,
    paths,
    where(eb) {
      const out = []
      if (actions.length) out.push(eb('action', 'in', actions))
      if (interfaces.length) out.push(eb('interface', 'in', interfaces))
      if (failureTypes.length) out.push(eb('failure_type', 'in', failureTypes))
      if (userIds.length) out.push(eb('user_id', 'in', userIds))
      if (paths.length) out.push(pathIn(eb, dialect, 'path', paths))
      if (folders.length) out.push(inFolders(eb, dialect, 'path', folders))
      if (sources.length) out.push(pathIn(eb, dialect, 'source', sources))
      if (destinations.length) out.push(pathIn(eb, dialect, 'destination', destinations))
      if (ips.length) out.push(eb('ip', 'in', ips))
      if (usernames.length)
        out.push(
          eb(
            eb.fn('lower', ['username']),
            'in',
            usernames.map((u) => dialect.lowerLike(u)),
          ),
        )
      return out
    },
  }
}

const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v))
const text = (v: string | undefined) => (v === undefined || v === '' ? null : v)

export const HISTORY_EXPORT: ExportKindSpec = {
  kind: 'history',
  versionField: 'history_version',
  fileName: 'history-export',
  columns: HISTORY_COLUMNS,
  queryFields: [...SUPPORTED, ...UNSUPPORTED_HISTORY_FIELDS],
  parseQuery,
  fromCsv(r) {
    return {
      id: Number(r[0]),
      created_at: Date.parse(r[1]!) / 1000,
      created_at_iso: r[2],
      user_id: num(r[3]),
      file_id: num(r[4]),
      parent_id: num(r[5]),
      path: r[6] ?? '',
      folder: r[7] ?? '',
      src: text(r[8]),
      destination: text(r[9]),
      ip: text(r[10]),
      username: text(r[11]),
      user_is_from_parent_site: r[12] === 'true',
      action: r[13],
      failure_type: text(r[14]),
      interface: text(r[15]),
      target_id: num(r[16]),
      target_name: text(r[17]),
      target_permission: text(r[18]),
      target_recursive: r[19] === '' ? null : r[19] === 'true',
      target_expires_at: num(r[20]),
      target_expires_at_iso: text(r[21]),
      target_permission_set: text(r[22]),
      target_platform: text(r[23]),
      target_username: text(r[24]),
      target_user_id: num(r[25]),
    }
  },
}

interface Target {
  type?: string
  id?: number
  name?: string
}

/**
 * An Action as a CSV row. The first target names what was acted on: a file or folder gives
 * `file_id`, anything else (a user, an API key, a permission) `target_id` and `target_name`.
 */
function toCsvRow(row: unknown[]): unknown[] {
  const [
    id,
    createdAt,
    userId,
    path,
    folder,
    source,
    destination,
    ip,
    username,
    action,
    failure,
    via,
    targets,
  ] = row as [number, number, ...unknown[]]
  let first: Target | undefined
  try {
    first = (JSON.parse(String(targets)) as Target[])[0]
  } catch {
    first = undefined
  }
  const isFile = first?.type === 'file' || first?.type === 'folder'
  const when = formatDateTime(Number(createdAt))
  return [
    id,
    when,
    when,
    userId,
    isFile ? (first?.id ?? null) : null,
    null,
    path,
    folder,
    source,
    destination,
    ip,
    username,
    'false',
    action,
    failure,
    via,
    !isFile && first ? (first.id ?? null) : null,
    !isFile && first ? (first.name ?? null) : null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
  ]
}

export function historySource(handle: DatabaseHandle): ExportSource {
  const dialect = handle.dialect
  const db = handle.db as Kysely<Database>
  return {
    pages(job: ExportJob, pageSize: number, signal: AbortSignal) {
      const query = parseQuery(job.query, dialect)
      return keysetPages(handle, {
        table: 'actions',
        job,
        pageSize,
        signal,
        db,
        select: (qb) =>
          qb
            .select([
              'id',
              'created_at',
              'user_id',
              'path',
              'folder',
              'source',
              'destination',
              'ip',
              'username',
              'action',
              'failure_type',
              'interface',
              'targets',
            ])
            .where((eb) => eb.and(query.where(eb))),
        mapRow: toCsvRow,
      })
    },
  }
}
