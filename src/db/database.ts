import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type SQLite from 'better-sqlite3'
import { type CompiledQuery, Kysely, Migrator, SqliteDialect, sql } from 'kysely'
import type pg from 'pg'
import { type CsvBlock, copyCsvBlocks, copyCsvInOneSnapshot } from './copy-csv.js'
import type { SqlDialect } from './dialects/dialect.js'
import { POSTGRES } from './dialects/postgres.js'
import { SQLITE } from './dialects/sqlite.js'
import { migrations } from './migrations/index.js'
import { OwnSchemaPostgresDialect } from './own-schema-introspector.js'
import type { Database } from './schema.js'

export interface DatabaseHandle {
  db: Kysely<Database>
  dialect: SqlDialect
  migrate(): Promise<string[]>
  /** The migrations `migrate` would apply, in order (`wharf migrate --dry-run`); applies none. */
  pendingMigrations(): Promise<string[]>
  /**
   * Calls `onNotify` whenever a transaction that ran `pg_notify(channel)` commits, in any process
   * (LISTEN on a connection of its own, re-established if it drops). SQLite: undefined, one
   * process owns the file and wakes itself.
   */
  listen?: (channel: (schema: string) => string, onNotify: () => void) => Promise<() => Promise<void>>
  /**
   * Runs a compiled SELECT and returns its rows as arrays, in the order of its columns: no object
   * per row, for reads of many rows (exports). Same placeholders as Kysely compiles for the dialect.
   */
  queryArrays(sql: string, params: readonly unknown[]): Promise<unknown[][]>
  /**
   * SQLite only: the better-sqlite3 connection under Kysely, for the few statements run many times
   * a second (the webhook dispatcher's claims and delivery log) without Kysely's executor.
   */
  sqlite?: RawSqlite
  /**
   * PostgreSQL only: runs a statement whose text never changes (the webhook dispatcher's claims
   * and delivery log), prepared once on each connection, its rows as arrays: no parse and plan
   * per run in the database, no Kysely executor and no object per row in Wharf.
   */
  prepared?: PreparedArrays
  /**
   * Where the dialect has `csvCopy` (PostgreSQL): the rows of a compiled SELECT as CSV the
   * database writes itself, in blocks of records ending in CRLF, in the select's order.
   */
  copyCsv?: (select: CompiledQuery<unknown>, signal: AbortSignal) => AsyncIterable<CsvBlock>
  /**
   * The same for several SELECTs at once, each on a connection of its own (the database writes
   * them in parallel), all reading one snapshot; `read` gets the blocks of each and must read them
   * all. The connections are closed, not pooled, when `read` fails or leaves a statement unread.
   */
  copyCsvInOneSnapshot?: <T>(
    selects: CompiledQuery<unknown>[],
    signal: AbortSignal,
    read: (blocks: AsyncIterable<CsvBlock>[]) => Promise<T>,
  ) => Promise<T>
  /** PostgreSQL only: the connection pool now (metrics). */
  poolStats?: () => { total: number; idle: number; waiting: number }
  /** SQLite on a file only: its path, for a second (read-only) connection in another thread. */
  sqliteFile?: string
  close(): Promise<void>
}

/**
 * Synchronous statements on the SQLite connection. `hold` runs `work` while it holds Kysely's
 * connection, so no Kysely transaction is open around it and none begins during it: a
 * transaction `work` begins commits (or rolls back) before anyone else uses the connection.
 */
export interface RawSqlite {
  hold<T>(work: (db: SQLite.Database) => T): Promise<T>
  /** The statement of a fixed SQL text, prepared once (`all`/`run` leave it free for the next use). */
  statement(text: string): SQLite.Statement
  /** Runs `work` in a transaction: committed when it returns, rolled back when it throws. Within `hold` only. */
  transaction<T>(work: () => T): T
}

/** Runs a fixed statement (`$1`… placeholders) on the pool, prepared per connection; rows as arrays. */
export type PreparedArrays = (text: string, params: readonly unknown[]) => Promise<unknown[][]>

export interface DatabaseOptions {
  /** `postgres://…`; without it, SQLite at `<dataDir>/wharf.sqlite`. */
  url?: string | undefined
  dataDir: string
  /** PostgreSQL schema to use (created if missing); lets test runs share one database. */
  schema?: string | undefined
  /** SQLite file name inside dataDir, or ':memory:'. */
  sqliteFile?: string
}

// Each process loads only the driver it uses (the other one would cost ~10 MiB of memory). A
// require() resolves the package anew each time (its package.json, realpath), so the module is
// kept once loaded.
const load = createRequire(import.meta.url)
let pgModule: typeof pg | undefined
const loadPg = (): typeof pg => (pgModule ??= load('pg') as typeof pg)
const loadSqlite = () => load('better-sqlite3') as typeof SQLite

/**
 * int8 (bigint) columns hold ids and epoch-millisecond times: both fit a JS number exactly. The
 * driver asks for a parser for every column of every result, so the lookup must cost nothing.
 */
const int8 = (v: string) => Number(v)
function pgTypesOf(driver: typeof pg) {
  return {
    getTypeParser(oid: number, format?: any) {
      if (oid === 20) return int8
      return driver.types.getTypeParser(oid, format)
    },
  }
}

export function openDatabase(opts: DatabaseOptions): DatabaseHandle {
  if (opts.url) return openPostgres(opts.url, opts.schema)
  return openSqlite(opts)
}

function openSqlite(opts: DatabaseOptions): DatabaseHandle {
  const file = opts.sqliteFile ?? 'wharf.sqlite'
  let target = file
  if (file !== ':memory:') {
    fs.mkdirSync(opts.dataDir, { recursive: true })
    target = path.join(opts.dataDir, file)
  }
  const Sqlite = loadSqlite()
  const sqlite = new Sqlite(target)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('busy_timeout = 5000')
  // Statistics for the query planner, refreshed cheaply where they are missing or stale: without
  // them SQLite can pick the time index of a large history over the path index of one file.
  sqlite.pragma('optimize = 0x10002')
  const db = new Kysely<Database>({ dialect: new SqliteRollbackSafeDialect(sqlite) })
  const statements = new Map<string, SQLite.Statement>()
  const inTransaction = sqlite.transaction((work: () => unknown) => work())
  const raw: RawSqlite = {
    hold: (work) => db.connection().execute(async () => work(sqlite)),
    statement(text) {
      let stmt = statements.get(text)
      if (stmt === undefined) {
        stmt = sqlite.prepare(text)
        statements.set(text, stmt)
      }
      return stmt
    },
    transaction: <T>(work: () => T) => inTransaction(work) as T,
  }
  // Large reads take their statements from a cache of their own: these are switched to arrays.
  const arrayStatements = new Map<string, SQLite.Statement>()
  // Run while Kysely's connection is held, so a read never lands inside another caller's open
  // transaction and sees rows that may yet roll back.
  const queryArrays = (text: string, params: readonly unknown[]) =>
    raw.hold(() => {
      let stmt = arrayStatements.get(text)
      if (stmt === undefined) {
        stmt = sqlite.prepare(text).raw(true)
        if (arrayStatements.size >= 50) arrayStatements.delete(arrayStatements.keys().next().value!)
        arrayStatements.set(text, stmt)
      }
      return stmt.all(...params) as unknown[][]
    })
  return {
    ...handle(db, SQLITE, queryArrays),
    sqlite: raw,
    ...(target !== ':memory:' ? { sqliteFile: target } : {}),
  }
}

/**
 * SQLite rolls a transaction back by itself on some failures (SQLITE_FULL among them); Kysely's
 * ROLLBACK after that would fail with "cannot rollback - no transaction is active" and that
 * error would replace the one that matters. Rolling back only what is still open keeps it.
 */
class SqliteRollbackSafeDialect extends SqliteDialect {
  constructor(private readonly sqlite: SQLite.Database) {
    super({ database: withStatementCache(sqlite) })
  }

  override createDriver() {
    const driver = super.createDriver()
    const rollback = driver.rollbackTransaction.bind(driver)
    driver.rollbackTransaction = async (connection) => {
      if (this.sqlite.inTransaction) await rollback(connection)
    }
    return driver
  }
}

/**
 * Kysely prepares every query anew, and for the small indexed reads on every request (the API key,
 * its user) preparing costs more than running. Statements are reusable, so the same SQL text gets
 * the same statement; one still being iterated (`busy`) is never shared.
 */
function withStatementCache(sqlite: SQLite.Database, max = 500) {
  const cache = new Map<string, SQLite.Statement>()
  return {
    prepare(text: string) {
      let stmt = cache.get(text)
      if (stmt === undefined || stmt.busy) {
        stmt = sqlite.prepare(text)
        if (cache.size >= max) cache.delete(cache.keys().next().value!)
        cache.set(text, stmt)
      }
      return stmt
    },
    close: () => sqlite.close(),
  }
}

function openPostgres(url: string, schema: string | undefined): DatabaseHandle {
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new Error(`bad schema name ${schema}`)
  const pg = loadPg()
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    types: pgTypesOf(pg),
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  const db = new Kysely<Database>({ dialect: new OwnSchemaPostgresDialect({ pool }) })
  const queryArrays = async (text: string, params: readonly unknown[]) =>
    (await pool.query({ text, values: params as unknown[], rowMode: 'array' })).rows as unknown[][]
  // The driver prepares a named statement on a connection the first time it runs there. The
  // texts are a handful of fixed statements, so a name per text is never reused for another.
  const names = new Map<string, string>()
  const prepared: PreparedArrays = async (text, params) => {
    let name = names.get(text)
    if (name === undefined) {
      name = `wharf_${names.size + 1}`
      names.set(text, name)
    }
    return (await pool.query({ name, text, values: params as unknown[], rowMode: 'array' }))
      .rows as unknown[][]
  }
  /** The COPY … TO STDOUT of a compiled SELECT, its values written in (COPY takes no parameters). */
  const copyText = (select: CompiledQuery<unknown>) => POSTGRES.csvCopy!(inlineParameters(pg, select))
  const h = {
    ...handle(db, POSTGRES, queryArrays, schema),
    prepared,
    copyCsv: (select: CompiledQuery<unknown>, signal: AbortSignal) =>
      copyCsvBlocks(pool, copyText(select), signal),
    copyCsvInOneSnapshot: <T>(
      selects: CompiledQuery<unknown>[],
      signal: AbortSignal,
      read: (blocks: AsyncIterable<CsvBlock>[]) => Promise<T>,
    ) => copyCsvInOneSnapshot(pool, selects.map(copyText), signal, read),
    listen: (channel: (schema: string) => string, onNotify: () => void) =>
      listenPostgres(pg, url, schema, channel, onNotify),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  }
  if (!schema) return h
  return {
    ...h,
    async migrate() {
      // A separate client: the pool's connections already carry the search_path option.
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        await c.query(`create schema if not exists ${schema}`)
      } finally {
        await c.end()
      }
      return h.migrate()
    },
  }
}

/**
 * Quoted text of a statement (string constants, quoted identifiers, comments), which is copied as
 * it is, or a `$n` placeholder outside them. Kysely puts every value in a parameter, but a
 * statement may still hold SQL written by hand (`sql.raw`, a format string such as to_char's).
 */
const PLACEHOLDER = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|\$(\d+)/g

/**
 * A compiled statement with its values written into the text, for COPY, which takes no
 * parameters: each `$n` outside quotes and comments becomes its value, strings quoted by the
 * driver's escapeLiteral, numbers parenthesised (a negative one after `-` would start a comment).
 */
export function inlineParameters(
  pg: { escapeLiteral(s: string): string },
  query: CompiledQuery<unknown>,
): string {
  return query.sql.replace(PLACEHOLDER, (quoted: string, n: string | undefined) => {
    if (n === undefined) return quoted
    const v = query.parameters[Number(n) - 1]
    if (typeof v === 'string') return pg.escapeLiteral(v)
    if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint') return `(${v})`
    if (typeof v === 'boolean') return String(v)
    if (v === null) return 'null'
    throw new Error(`a value of type ${typeof v} cannot be written into a COPY statement`)
  })
}

async function migratorFor(db: Kysely<Database>, dialect: SqlDialect, schema: string | undefined) {
  // Without the schema, Kysely looks for its migration tables in every schema of the database,
  // finds another schema's, skips creating its own and fails (test runs share one database,
  // and a DATABASE_URL may choose a schema with `options=-c search_path=…`).
  let tableSchema = schema
  if (tableSchema === undefined && dialect.name === 'postgres') {
    const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(db)
    tableSchema = rows[0]?.s
  }
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    ...(tableSchema ? { migrationTableSchema: tableSchema } : {}),
  })
}

/** A database that a newer Wharf has migrated: said plainly at start-up, nothing changed. */
export class DatabaseNewerError extends Error {
  constructor(readonly unknown: string[]) {
    super(
      `The database was upgraded by a newer version of Wharf: it has migration${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}, which this version does not know. Run that newer version, or restore a backup taken before the upgrade.`,
    )
    this.name = 'DatabaseNewerError'
  }
}

async function refuseNewer(db: Kysely<Database>): Promise<void> {
  let applied: string[]
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db)
    applied = rows.map((r) => r.name)
  } catch {
    return // no migration table yet: a new database
  }
  const unknown = applied.filter((name) => !(name in migrations)).sort()
  if (unknown.length > 0) throw new DatabaseNewerError(unknown)
}

function handle(
  db: Kysely<Database>,
  dialect: SqlDialect,
  queryArrays: DatabaseHandle['queryArrays'],
  schema?: string,
): DatabaseHandle {
  return {
    db,
    dialect,
    queryArrays,
    async migrate() {
      const migrator = await migratorFor(db, dialect, schema)
      await refuseNewer(db)
      // On PostgreSQL the migrator's introspection reads only this schema (own-schema-introspector.ts).
      const { error, results } = await migrator.migrateToLatest()
      if (error) throw error
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    },
    async pendingMigrations() {
      const migrator = await migratorFor(db, dialect, schema)
      await refuseNewer(db)
      return (await migrator.getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name)
    },
    close: () => db.destroy(),
  }
}

async function listenPostgres(
  pg: ReturnType<typeof loadPg>,
  url: string,
  schema: string | undefined,
  channel: (schema: string) => string,
  onNotify: () => void,
): Promise<() => Promise<void>> {
  let closed = false
  let client: pg.Client | null = null
  let retry: NodeJS.Timeout | null = null
  const connect = async (): Promise<void> => {
    const c = new pg.Client({
      connectionString: url,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    })
    c.on('notification', onNotify)
    c.on('error', () => reconnect(c))
    c.on('end', () => reconnect(c))
    await c.connect()
    const { rows } = await c.query<{ s: string }>('select current_schema() as s')
    await c.query(`listen "${channel(rows[0]!.s).replaceAll('"', '')}"`)
    client = c
    if (closed) await c.end()
  }
  const reconnect = (c: pg.Client) => {
    if (closed || client !== c) return
    client = null
    c.removeAllListeners('end')
    void c.end().catch(() => {})
    retry = setTimeout(() => {
      retry = null
      connect()
        // Whatever was committed while the connection was down is looked at now.
        .then(onNotify)
        .catch(() => reconnect(c))
    }, 1000)
    retry.unref()
  }
  await connect()
  return async () => {
    closed = true
    if (retry) clearTimeout(retry)
    const c = client
    client = null
    if (c) {
      c.removeAllListeners('end')
      await c.end().catch(() => {})
    }
  }
}
