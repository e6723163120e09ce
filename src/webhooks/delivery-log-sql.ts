import type { Kysely, Selectable } from 'kysely'
import type { PreparedArrays, RawSqlite } from '../db/database.js'
import type { Database, NotificationState, WebhookAttemptsTable } from '../db/schema.js'

/** One `webhook_attempts` row as written. */
export type AttemptRow = Omit<Selectable<WebhookAttemptsTable>, 'id'>

export interface NextState {
  id: number
  attempts: number
  state: NotificationState
  next: number | null
  now: number
}

/** The columns of a delivery-log record as written, in order (the export benchmark writes them too). */
export const ATTEMPT_COLUMNS = [
  'site_id',
  'notification_id',
  'attempt',
  'created_at',
  'user_id',
  'operation',
  'status',
  'message',
  'success',
  'request_headers',
  'request_method',
  'request_url',
  'request_body',
  'path',
  'folder',
  'response_size',
  'response_body',
  'duration_ms',
  'behavior_id',
] as const
const PG_TYPES: Record<(typeof ATTEMPT_COLUMNS)[number], string> = {
  site_id: 'bigint',
  notification_id: 'bigint',
  attempt: 'int',
  created_at: 'bigint',
  user_id: 'bigint',
  operation: 'text',
  status: 'int',
  message: 'text',
  success: 'int',
  request_headers: 'text',
  request_method: 'text',
  request_url: 'text',
  request_body: 'text',
  path: 'text',
  folder: 'text',
  response_size: 'bigint',
  response_body: 'text',
  duration_ms: 'int',
  behavior_id: 'bigint',
}

// The statements' text never changes, so each is prepared once and nothing is built per row.
// PostgreSQL: a whole batch travels as one JSON parameter (one round trip). SQLite: bound
// parameters, in chunks of fixed sizes (reading 18 fields out of JSON cost twice the insert).
const CHUNKS = [64, 16, 4, 1]
const rowSlots = `(${ATTEMPT_COLUMNS.map(() => '?').join(', ')})`
const SQLITE_INSERT = new Map(
  CHUNKS.map((n) => [
    n,
    `insert into webhook_attempts (${ATTEMPT_COLUMNS.join(', ')}) values ${Array(n).fill(rowSlots).join(', ')} returning id, notification_id, attempt`,
  ]),
)
const SQLITE_UPDATE = `update webhook_notifications set attempts = ?, state = ?, next_attempt_at = ?,
  lease_owner = null, lease_until = null, updated_at = ? where id = ? and lease_owner = ?`

export type Returned = { id: number; notification_id: number; attempt: number }

/** Where the log is written: the database, and on SQLite the connection itself. */
export interface LogTarget {
  db: Kysely<Database>
  /** SQLite: the connection itself, for the log's two statements without an executor. */
  raw?: RawSqlite | undefined
  /** PostgreSQL: the log's one statement prepared, without an executor. */
  prepared?: PreparedArrays | undefined
}

/**
 * The one write of the delivery log: the attempts and their notifications' new state, committed
 * together, where this worker (`owner`) still holds each notification's claim. Resolves to the
 * attempts' ids with what identifies each (RETURNING promises no order).
 *
 * Each database has one fast way, which the webhook benchmark's figures rest on (a delivery is
 * written many thousand times a second: docs/performance.md, "Webhook outbox"): on SQLite the
 * connection itself, on PostgreSQL one prepared statement. Without them (a database opened
 * without its direct handles) the log is written the plain way, through Kysely, with the same
 * result; a test compares the two on both databases.
 */
export function writeAttempts(
  to: LogTarget,
  owner: string,
  rows: AttemptRow[],
  states: NextState[],
): Promise<Returned[]> {
  const raw = to.raw
  if (raw) return raw.hold(() => writeOnConnection(raw, owner, rows, states))
  if (to.prepared) return writePrepared(to.prepared, owner, rows, states)
  return writePlain(to.db, owner, rows, states)
}

/** The plain way: Kysely's query builder, in one transaction, on either database. */
function writePlain(
  db: Kysely<Database>,
  owner: string,
  rows: AttemptRow[],
  states: NextState[],
): Promise<Returned[]> {
  return db.transaction().execute(async (trx) => {
    const inserted =
      rows.length === 0
        ? []
        : await trx
            .insertInto('webhook_attempts')
            .values(rows)
            .returning(['id', 'notification_id', 'attempt'])
            .execute()
    for (const s of states) {
      await trx
        .updateTable('webhook_notifications')
        .set({
          attempts: s.attempts,
          state: s.state,
          next_attempt_at: s.next,
          lease_owner: null,
          lease_until: null,
          updated_at: s.now,
        })
        .where('id', '=', s.id)
        .where('lease_owner', '=', owner)
        .execute()
    }
    return inserted.map((r) => ({
      id: Number(r.id),
      notification_id: Number(r.notification_id),
      attempt: Number(r.attempt),
    }))
  })
}

/** The inserts of the attempts (SQLite): statements of fixed sizes, and their parameters. */
function* insertChunks(rows: AttemptRow[]): Generator<[string, unknown[]]> {
  let i = 0
  while (i < rows.length) {
    const n = CHUNKS.find((c) => c <= rows.length - i)!
    const params: unknown[] = []
    for (let j = i; j < i + n; j++) {
      const row = rows[j]!
      for (const c of ATTEMPT_COLUMNS) params.push(row[c])
    }
    yield [SQLITE_INSERT.get(n)!, params]
    i += n
  }
}

/**
 * PostgreSQL: the attempts and their notifications' new state in one statement (a statement is
 * atomic on its own, and a data-modifying WITH always runs to completion), prepared once per
 * connection, its ids as arrays: one round trip and no plan per batch, instead of BEGIN, two
 * statements and COMMIT.
 */
async function writePrepared(
  prepared: PreparedArrays,
  owner: string,
  rows: AttemptRow[],
  states: NextState[],
): Promise<Returned[]> {
  const out = await prepared(PG_WRITE, pgParams(owner, rows, states))
  return out.map((a) => ({ id: a[0] as number, notification_id: a[1] as number, attempt: a[2] as number }))
}

// A whole batch travels as two JSON parameters: JSON.stringify is native, and the text never
// changes with the batch's size.
const pgParams = (owner: string, rows: AttemptRow[], states: NextState[]) => [
  JSON.stringify(rows),
  JSON.stringify(states),
  owner,
]
const PG_WRITE = `
  with inserted as (
    insert into webhook_attempts (${ATTEMPT_COLUMNS.join(', ')})
    select ${ATTEMPT_COLUMNS.join(', ')} from json_to_recordset($1::json)
      as v(${ATTEMPT_COLUMNS.map((c) => `${c} ${PG_TYPES[c]}`).join(', ')})
    returning id, notification_id, attempt
  ), updated as (
    update webhook_notifications as w
    set attempts = v.attempts, state = v.state, next_attempt_at = v.next,
        lease_owner = null, lease_until = null, updated_at = v.now
    from json_to_recordset($2::json) as v(id bigint, attempts int, state text, next bigint, now bigint)
    where w.id = v.id and w.lease_owner = $3
  )
  select id, notification_id, attempt from inserted`

/**
 * SQLite, on the connection itself: the same statements in one transaction, run synchronously
 * (the caller holds the connection: see RawSqlite.hold).
 */
function writeOnConnection(
  raw: RawSqlite,
  owner: string,
  rows: AttemptRow[],
  states: NextState[],
): Returned[] {
  return raw.transaction(() => {
    const out: Returned[] = []
    for (const [text, params] of insertChunks(rows)) {
      // Arrays (`raw`): the driver's row objects cost more than the insert itself.
      const ids = raw.statement(text).raw(true).all(params) as [number, number, number][]
      for (const [id, notification_id, attempt] of ids) out.push({ id, notification_id, attempt })
    }
    const update = raw.statement(SQLITE_UPDATE)
    for (const s of states) update.run(s.attempts, s.state, s.next, s.now, s.id, owner)
    return out
  })
}
