import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import type { DatabaseHandle } from '../db/database.js'
import type { SqlDialect } from '../db/dialects/dialect.js'
import type { Database } from '../db/schema.js'
import { deliveringAttempts } from '../webhooks/delivering-attempts.js'
import type { ExportJob, ExportKindSpec, ExportSource, ParsedQuery } from './export-kind.js'
import {
  copiedCsvBlocks,
  copiedCsvHalves,
  csvHalves,
  type KeysetRead,
  keysetCsvBlocks,
} from './keyset-pages.js'
import {
  asGiven,
  booleanValues,
  containsAny,
  inFolders,
  integerValues,
  pathIn,
  pathValues,
  splitValues,
} from './query-fields.js'

/**
 * Webhook-log exports (ActionNotificationExport): the delivery log, `webhook_attempts`, one
 * record per attempt.
 */

/** ActionNotificationExportResult: the spec's fields, then Wharf's extensions. */
export const WEBHOOK_LOG_COLUMNS = [
  'id',
  'created_at',
  'status',
  'message',
  'success',
  'request_headers',
  'request_method',
  'request_url',
  'path',
  'folder',
  'attempt',
  'operation',
  'response_size',
  'response_body',
  'request_body',
  'behavior_id',
] as const

const QUERY_FIELDS = [
  'query_message',
  'query_request_method',
  'query_request_url',
  'query_status',
  'query_path',
  'query_folder',
  'query_success',
  'query_behavior_id',
] as const

function parseQuery(body: Record<string, unknown>, dialect: SqlDialect): ParsedQuery {
  const messages = splitValues(body['query_message'], 'query_message')
  const methods = splitValues(body['query_request_method'], 'query_request_method', true)
  const urls = splitValues(body['query_request_url'], 'query_request_url')
  const statuses = integerValues(body['query_status'], 'query_status')
  const paths = pathValues(body['query_path'], 'query_path')
  const folders = pathValues(body['query_folder'], 'query_folder')
  const success = [...new Set(booleanValues(body['query_success'], 'query_success'))]
  const behaviors = integerValues(body['query_behavior_id'], 'query_behavior_id')
  return {
    given: {
      query_message: asGiven(body['query_message']),
      query_request_method: asGiven(body['query_request_method']),
      query_request_url: asGiven(body['query_request_url']),
      query_status: asGiven(body['query_status']),
      query_path: asGiven(body['query_path']),
      query_folder: asGiven(body['query_folder']),
      // Both values, or none, restrict nothing.
      query_success: success.length === 1 ? success[0]! : null,
      query_behavior_id: asGiven(body['query_behavior_id']),
    },
    folders,
    paths,
    where(eb) {
      const out = []
      if (messages.length) out.push(containsAny(eb, dialect, 'message', messages))
      if (methods.length)
        out.push(
          eb(
            sql`lower(request_method)`,
            'in',
            methods.map((m) => dialect.lowerLike(m)),
          ),
        )
      if (urls.length) out.push(eb('request_url', 'in', urls))
      if (statuses.length) out.push(eb('status', 'in', statuses))
      if (paths.length) out.push(pathIn(eb, dialect, 'path', paths))
      // The record's path is the folder or lies inside it.
      if (folders.length) out.push(inFolders(eb, dialect, 'path', folders))
      if (success.length === 1) out.push(eb('success', '=', success[0] ? 1 : 0))
      if (behaviors.length) out.push(eb('behavior_id', 'in', behaviors))
      return out
    },
  }
}

export const WEBHOOK_LOG_EXPORT: ExportKindSpec = {
  kind: 'webhook_log',
  versionField: 'export_version',
  fileName: 'action-notification-export',
  columns: WEBHOOK_LOG_COLUMNS,
  queryFields: QUERY_FIELDS,
  parseQuery,
  fromCsv(r) {
    return {
      id: Number(r[0]),
      created_at: Date.parse(r[1]!) / 1000,
      status: Number(r[2]),
      message: r[3],
      success: r[4] === 'true',
      request_headers: r[5],
      request_method: r[6],
      request_url: r[7],
      path: r[8],
      folder: r[9],
      attempt: Number(r[10]),
      operation: r[11],
      response_size: Number(r[12]),
      response_body: r[13],
      request_body: r[14],
      behavior_id: r[15] === undefined || r[15] === '' ? null : Number(r[15]),
    }
  },
  /**
   * Wharf extensions of the JSON results: the record of the attempt that has since delivered a
   * failed record's notification (what the retry endpoint would refuse it for), or null. One
   * query a page; the CSV and the SQL that builds it stay as they are.
   */
  async extendResults(db, siteId, items) {
    const failed = items.filter((r) => r['success'] === false).map((r) => r['id'] as number)
    const delivered = await deliveringAttempts(db, siteId, failed)
    for (const r of items) {
      const by = delivered.get(r['id'] as number)
      r['delivered_by_id'] = by?.id ?? null
      r['delivered_by_attempt'] = by?.attempt ?? null
    }
  },
}

/** A text column as csv-stringify writes it: quoted (quotes doubled) when it holds `"`, `,`, CR or LF. */
function csvText(dialect: SqlDialect, column: string) {
  const c = sql.ref(column)
  const find = sql.raw(dialect.findFunction)
  const nl = dialect.chr(10)
  const cr = dialect.chr(13)
  // A quote settles it at once (JSON fields always hold one): the other scans only when there is none.
  return sql`(case when ${find}(${c}, '"') > 0 then '"' || replace(${c}, '"', '""') || '"' when ${find}(${c}, ',') > 0 or ${find}(${c}, ${nl}) > 0 or ${find}(${c}, ${cr}) > 0 then '"' || ${c} || '"' else ${c} end)`
}

/**
 * The log records of an export as CSV made by the database, a page in one block: csv-stringify's
 * output for the same values (RFC 4180 quoting only where needed; a test holds them to it), but
 * without a JavaScript call per field, which cost ten times what the database spends reading the
 * rows, nor a JavaScript string per record.
 */
export function webhookLogSource(handle: DatabaseHandle): ExportSource {
  const dialect = handle.dialect
  const db = handle.db as Kysely<Database>
  const iso = dialect.isoSeconds('created_at')
  // SQLite's || turns an integer into its text by itself; a cast per field cost 7% of the build.
  const num = (column: string) => dialect.asText(sql.ref(column))
  const text = (column: string) => csvText(dialect, column)
  const fields = [
    num('id'),
    iso,
    num('status'),
    text('message'),
    sql`(case when success = 1 then 'true' else 'false' end)`,
    text('request_headers'),
    text('request_method'),
    text('request_url'),
    text('path'),
    text('folder'),
    num('attempt'),
    text('operation'),
    num('response_size'),
    text('response_body'),
    text('request_body'),
    // Null for the site's listener: an empty field (a NULL would make the whole line NULL).
    sql`coalesce(${dialect.asText(sql.ref('behavior_id'))}, '')`,
  ]
  const line = sql<string>`${sql.join(fields, sql` || ',' || `)}`
  // Where the database writes the CSV itself (PostgreSQL's COPY), the columns as they are: it
  // quotes as csv-stringify does, except an empty text, which it quotes and a NULL it does not.
  const nonEmpty = (column: string) => sql`nullif(${sql.ref(column)}, '')`
  const copied = [
    sql.ref('id'),
    iso,
    sql.ref('status'),
    nonEmpty('message'),
    sql`(case when success = 1 then 'true' else 'false' end)`,
    ...['request_headers', 'request_method', 'request_url', 'path', 'folder'].map(nonEmpty),
    sql.ref('attempt'),
    nonEmpty('operation'),
    sql.ref('response_size'),
    nonEmpty('response_body'),
    nonEmpty('request_body'),
    sql.ref('behavior_id'),
  ]
  const read = (job: ExportJob, pageSize: number, signal: AbortSignal, copy = false): KeysetRead => {
    const query = parseQuery(job.query, dialect)
    return {
      table: 'webhook_attempts',
      job,
      pageSize,
      signal,
      db,
      select: (qb) => {
        const q: SelectQueryBuilder<any, any, any> = copy
          ? qb.select(copied.map((c, n) => c.as(`c${n}`)))
          : qb.select(['id', line.as('line')])
        return q.where((eb) => eb.and(query.where(eb)))
      },
    }
  }
  return {
    async *pages(job: ExportJob, pageSize: number, signal: AbortSignal) {
      if (dialect.csvCopy && handle.copyCsv) yield* copiedCsvBlocks(handle, read(job, pageSize, signal, true))
      else yield* keysetCsvBlocks(handle, read(job, pageSize, signal))
    },
    halves: (job, pageSize, signal, header) =>
      dialect.csvCopy && handle.copyCsvInOneSnapshot
        ? copiedCsvHalves(handle, read(job, pageSize, signal, true), header)
        : csvHalves(handle, read(job, pageSize, signal), header),
  }
}
