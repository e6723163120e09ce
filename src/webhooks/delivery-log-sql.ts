import { type Kysely, sql } from 'kysely'
import type { Database, NotificationState } from '../db/schema.js'
import { isPostgresDb } from './webhook-outbox.js'

/** One `webhook_attempts` row as written. */
export interface AttemptRow {
  site_id: number
  notification_id: number
  attempt: number
  created_at: number
  user_id: number | null
  operation: string
  status: number
  message: string
  success: number
  request_headers: string
  request_method: string
  request_url: string
  request_body: string
  path: string
  folder: string
  response_size: number
  response_body: string
  duration_ms: number
}

export interface NextState {
  id: number
  attempts: number
  state: NotificationState
  next: number | null
  now: number
}

const COLUMNS = [
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
] as const
const PG_TYPES: Record<(typeof COLUMNS)[number], string> = {
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
}
const columnList = sql.raw(COLUMNS.join(', '))
const sqliteValues = sql.raw(COLUMNS.map((c) => `value ->> '$.${c}'`).join(', '))
const pgRecord = sql.raw(COLUMNS.map((c) => `${c} ${PG_TYPES[c]}`).join(', '))

// A whole batch travels as one JSON parameter: the statements' text never changes (prepared once),
// and no query is built per row.

/** Inserts the attempts; returns their ids with what identifies each (RETURNING promises no order). */
export async function insertAttempts(db: Kysely<Database>, rows: AttemptRow[]) {
  const json = JSON.stringify(rows)
  const query = isPostgresDb(db)
    ? sql<{ id: number; notification_id: number; attempt: number }>`
        insert into webhook_attempts (${columnList})
        select ${columnList} from json_to_recordset(${json}::json) as v(${pgRecord})
        returning id, notification_id, attempt`
    : sql<{ id: number; notification_id: number; attempt: number }>`
        insert into webhook_attempts (${columnList})
        select ${sqliteValues} from json_each(${json})
        returning id, notification_id, attempt`
  return (await query.execute(db)).rows
}

/** Sets each notification's new state, where this worker still holds its claim. */
export async function updateNotifications(db: Kysely<Database>, owner: string, states: NextState[]) {
  const json = JSON.stringify(states)
  const query = isPostgresDb(db)
    ? sql`
        update webhook_notifications as w
        set attempts = v.attempts, state = v.state, next_attempt_at = v.next,
            lease_owner = null, lease_until = null, updated_at = v.now
        from json_to_recordset(${json}::json) as v(id bigint, attempts int, state text, next bigint, now bigint)
        where w.id = v.id and w.lease_owner = ${owner}`
    : sql`
        update webhook_notifications
        set attempts = v.value ->> '$.attempts', state = v.value ->> '$.state',
            next_attempt_at = v.value ->> '$.next', lease_owner = null, lease_until = null,
            updated_at = v.value ->> '$.now'
        from json_each(${json}) as v
        where webhook_notifications.id = v.value ->> '$.id' and webhook_notifications.lease_owner = ${owner}`
  await query.execute(db)
}
