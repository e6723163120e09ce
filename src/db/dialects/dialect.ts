import type { Expression, RawBuilder } from 'kysely'

/**
 * What differs between the databases Wharf runs on, in one object per database (Kysely's style:
 * capabilities, and the few SQL fragments that are spelled differently). Code outside `db/` and
 * the repositories never asks which database it is on; it asks the dialect.
 * Add a member here (and to both dialects) rather than a branch on `name` elsewhere.
 */
export interface SqlDialect {
  /** For logs, start-up lines and statement tables keyed by database; never for branching. */
  readonly name: 'sqlite' | 'postgres'
  /** `FOR UPDATE SKIP LOCKED` for workers that claim rows; SQLite has one writer anyway. */
  readonly skipLocked: boolean
  /**
   * `id` is one of those a subquery returns. PostgreSQL: the ids as one array, each row then found
   * by its primary key (`id in (…)` made its planner hash the ids first, or read a small table
   * whole); SQLite: `id in (…)`.
   */
  idIn(ids: RawBuilder<unknown>): RawBuilder<boolean>
  /**
   * Only one process ever uses the database (SQLite's file): claims left by a process that died
   * can be released at start-up without waiting for their lease.
   */
  readonly singleProcess: boolean
  /** Row locks (`SELECT … FOR UPDATE`) exist; SQLite's write transaction already serialises. */
  readonly rowLocks: boolean
  /** The function that finds a substring: `instr(haystack, needle)` / `strpos(haystack, needle)`. */
  readonly findFunction: 'instr' | 'strpos'
  /** The character of a code point as SQL: `char(10)` / `chr(10)`. */
  chr(code: number): RawBuilder<string>
  /**
   * Lower-cases a LIKE pattern the way the database lower-cases the column it is matched with:
   * SQLite's lower() folds only ASCII, PostgreSQL's folds all of Unicode.
   */
  lowerLike(pattern: string): string
  /**
   * The planner picks indexes without statistics (SQLite without ANALYZE), so a few queries steer
   * it: `+column`, an expression no index offers, keeps it off that column's index. PostgreSQL
   * plans from statistics.
   */
  readonly indexHints: boolean
  /**
   * Paths (up to 5000 characters) are range-indexed by their first this-many characters only: a
   * B-tree entry must fit a PostgreSQL page (migration 003). Range conditions are then stated on
   * `substr(column, 1, n)` too, for the index. null: the whole value is indexed (SQLite).
   */
  readonly pathIndexPrefix: number | null
  /** Text compared in byte (code point) order, whatever the database's collation. */
  byteOrder(text: Expression<string>): RawBuilder<string>
  /**
   * A transaction-level advisory lock on a signed 64-bit key (a decimal string), held until the
   * transaction ends; null where the database has none (SQLite runs one write transaction at a
   * time, so it needs none).
   */
  readonly advisoryLock: ((key: string, mode: 'shared' | 'exclusive') => RawBuilder<unknown>) | null
  /**
   * A WITH may hold INSERT and UPDATE, and `json_to_recordset` turns one JSON parameter into rows
   * (PostgreSQL): a batch of writes travels as one statement, one round trip.
   */
  readonly writableCte: boolean
  /**
   * A condition, always true, that lets the statement's own transaction commit without waiting
   * for its WAL to reach the disk (PostgreSQL: `synchronous_commit` off for that transaction).
   * Only for writes whose loss in a crash of the database server merely repeats work (a job's
   * claim): a later durable commit on the server makes it durable too. null where commits do not
   * wait for the disk anyway (SQLite in WAL mode with synchronous=NORMAL).
   */
  readonly asyncCommit: RawBuilder<boolean> | null
  /**
   * A transaction's NOTIFY reaches the LISTENing connections of every process once it commits
   * (PostgreSQL); without it, a wake-up stays inside the process that wrote.
   */
  readonly notify: boolean
  /** A number as text in a `||` concatenation: SQLite converts by itself (a cast costs time). */
  asText(expression: RawBuilder<unknown>): RawBuilder<string>
  /** `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds) of a column of epoch milliseconds. */
  isoSeconds(epochMsColumn: string): RawBuilder<string>
  /**
   * The statement by which the database writes the rows of `select` as CSV itself, or null
   * (SQLite has no such statement; the CSV lines are built in SQL there, `crlfLines`). PostgreSQL:
   * `COPY (…) TO STDOUT (FORMAT csv)`, RFC 4180 quoting where a field holds `"`, `,`, CR or LF,
   * LF after each row, an empty text as `""` (a NULL as nothing), no parameters.
   */
  csvCopy: ((select: string) => string) | null
  /**
   * The lines of a group, in `orderBy` order, each followed by CRLF, as one value: SQLite's as a
   * blob (the driver hands over a Buffer, no string), PostgreSQL's as text.
   */
  crlfLines(line: string, orderBy: string): RawBuilder<unknown>
  /**
   * Gathers a table's planner statistics again now (PostgreSQL's `ANALYZE`), for a change so large
   * that plans made from the old ones go astray before autovacuum comes by; null where the
   * planner keeps no statistics (SQLite is never analyzed: see indexHints).
   */
  analyze: ((table: string) => RawBuilder<unknown>) | null
}
