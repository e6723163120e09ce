import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely'
import type { SqlDialect } from '../db/dialects/dialect.js'
import type { Database, ExportKind } from '../db/schema.js'

/** What a build reads: the export's site, its stored query and its time range. */
export interface ExportJob {
  id: number
  site_id: number
  kind: ExportKind
  /** The query fields as given (the `query` column, parsed). */
  query: Record<string, unknown>
  start_at: number | null
  end_at: number | null
}

/** A query as one kind of export understands it. */
export interface ParsedQuery {
  /** The query fields as given, as the export shows them (null where absent). */
  given: Record<string, string | boolean | null>
  /** Folders and paths the query names: a user who is not a site admin must administer them. */
  folders: string[]
  paths: string[]
  /** The conditions on the source table (AND). */
  where(eb: ExpressionBuilder<any, any>): Expression<SqlBool>[]
}

/**
 * Where the records of one kind of export come from. Tests swap it for a fake (a source that
 * fails, or a slow one), through the container's options.
 */
export interface ExportSource {
  /**
   * The matching records, oldest first, a page at a time: rows of values in the kind's column
   * order (encoded with csv-stringify), or a block of records already encoded as CSV (each
   * ending in CRLF) with their count.
   */
  pages(job: ExportJob, pageSize: number, signal: AbortSignal): AsyncIterable<CsvPage>
  /**
   * Optional: the same CSV (`header` first) written as two files built at once, on two cores;
   * null when that cannot help, and the build then streams `pages`.
   */
  halves?(job: ExportJob, pageSize: number, signal: AbortSignal, header: Buffer): Promise<HalvesWriter | null>
}

export type CsvPage = unknown[][] | { csv: Buffer; count: number }

/** Writes an export's CSV as two files, the two halves of its records; resolves to their count. */
export interface HalvesWriter {
  write(files: string[]): Promise<number>
}

/** One kind of export: its query fields, its result fields, and how a CSV row reads back as JSON. */
export interface ExportKindSpec {
  kind: ExportKind
  /** The export's version field (`export_version`, `history_version`), always "1". */
  versionField: string
  /** Name of the CSV file (`<name>-<id>.csv`). */
  fileName: string
  /** The result fields: the CSV header and the JSON results, in this order. */
  columns: readonly string[]
  /** The query fields, in the order the export shows them. */
  queryFields: readonly string[]
  /** Parses and checks the query fields of a create request (or of a stored query). */
  parseQuery(body: Record<string, unknown>, dialect: SqlDialect): ParsedQuery
  /** One CSV record back as the JSON result (CSV holds text; JSON has numbers, booleans, nulls). */
  fromCsv(record: string[]): Record<string, unknown>
  /**
   * Optional: fields the JSON results add after the CSV's, read from the database as it is now
   * (not from the snapshot) for one page of results at a time, with a bounded number of queries.
   */
  extendResults?(db: Kysely<Database>, siteId: number, items: Record<string, unknown>[]): Promise<void>
}

/** A failure the build reports as the export's `failure_reason` word for word. */
export class ExportFailure extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ExportFailure'
  }
}
