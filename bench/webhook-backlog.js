// The database side of `npm run bench:webhooks`: a backlog of pending notifications written
// straight into Wharf's outbox while Wharf is stopped, and what the dispatcher made of it.
// SQLite: DATA_DIR/wharf.sqlite with better-sqlite3; PostgreSQL: pg on the run's database.
import path from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { cpuSeconds, root } from './harness.js'

// The message ids come from the outbox's own function, so they have its form and uniqueness.
const { newMessageId } = await import(path.join(root, 'dist/webhooks/webhook-outbox.js'))
const { orderKey } = await import(path.join(root, 'dist/webhooks/webhook-ordering.js'))

/** Open the database of a Wharf from startWharf: `w.dataDir` for SQLite, `url` for PostgreSQL. */
export function openDatabase(w, url) {
  if (url) {
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    return {
      all: async (sql, params = []) => (await pool.query(sql, params)).rows,
      close: () => pool.end(),
      pool,
    }
  }
  const db = new SQLite(path.join(w.dataDir, 'wharf.sqlite'))
  db.pragma('busy_timeout = 10000')
  // pg-style $1 placeholders become ?, so the queries below serve both.
  const prep = (sql) => db.prepare(sql.replace(/\$\d+/g, '?'))
  return {
    all: async (sql, params = []) => prep(sql).all(...params),
    close: async () => db.close(),
    sqlite: db,
  }
}

/** The site's id and name (`accountname`) and the admin's id, as the outbox and sender use them. */
export async function siteFacts(db) {
  const [site] = await db.all('select id, name from sites order by id limit 1')
  const [user] = await db.all("select id, username from users where username = 'admin'")
  return { siteId: Number(site.id), accountname: site.name, userId: Number(user.id), username: user.username }
}

/**
 * Notification i of the backlog with the column values enqueueNotification writes for an
 * upload by the admin through the REST API (state pending, max_attempts 0, due now, no lease).
 * There is no Action behind it (action_id null): the dispatcher never reads that column.
 * `target` is the endpoint: null for the site's listener, or `{ behaviorId, url }` for one URL of
 * a webhook behavior. `state` 'held' gives the row as Wharf leaves a notification it claimed for
 * a paused or disabled endpoint: no due time, no lease.
 */
export function notification(facts, i, now, target = null, state = 'pending') {
  const folder = 'bench-backlog'
  const path = `${folder}/file-${String(i).padStart(7, '0')}.txt`
  return {
    site_id: facts.siteId,
    action_id: null,
    message_id: newMessageId(),
    operation: 'Upload',
    user_id: facts.userId,
    username: facts.username,
    protocol: 'restapi',
    path,
    sourcepath: '',
    folder,
    state,
    max_attempts: 0,
    next_attempt_at: state === 'held' ? null : now,
    lease_owner: null,
    lease_until: null,
    created_at: now,
    updated_at: now,
    behavior_id: target?.behaviorId ?? null,
    url: target?.url ?? null,
    // Each file its own path: ordered as Wharf orders them, and never held back by another.
    order_key: orderKey(facts.siteId, target, path),
    sequence: 1,
  }
}
const COLUMNS = Object.keys(notification({}, 0, 0))
const PG_TYPES = {
  site_id: 'bigint',
  action_id: 'bigint',
  behavior_id: 'bigint',
  user_id: 'bigint',
  max_attempts: 'integer',
  sequence: 'bigint',
}
for (const c of ['next_attempt_at', 'lease_until', 'created_at', 'updated_at']) PG_TYPES[c] = 'bigint'

/**
 * Writes `n` notifications in one transaction; returns the id range they got. They are pending
 * (or `state`), and go to `targets` in turn (see `notification`): the site's listener unless given.
 */
export async function insertBacklog(db, facts, n, { state = 'pending', targets = [null] } = {}) {
  const row = (j, now) => notification(facts, j, now, targets[j % targets.length], state)
  const now = Date.now()
  // A second backlog in the same database (the two-process run) counts only its own rows.
  const [before] = await db.all('select coalesce(max(id), 0) as hi from webhook_notifications')
  const BATCH = db.pool ? 5000 : 500
  if (db.pool) {
    const types = COLUMNS.map((c, i) => `$${i + 1}::${PG_TYPES[c] ?? 'text'}[]`)
    const sql = `insert into webhook_notifications (${COLUMNS.join(', ')}) select * from unnest(${types.join(', ')})`
    const client = await db.pool.connect()
    try {
      await client.query('begin')
      for (let i = 0; i < n; i += BATCH) {
        const cols = COLUMNS.map(() => [])
        for (let j = i; j < Math.min(n, i + BATCH); j++) {
          const r = row(j, now)
          for (const [c, name] of COLUMNS.entries()) cols[c].push(r[name])
        }
        await client.query(sql, cols)
      }
      await client.query('commit')
      // What autovacuum would do soon after a bulk load, so the claim query plans as in steady use.
      await client.query('analyze webhook_notifications')
    } catch (err) {
      await client.query('rollback').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  } else {
    const sqlite = db.sqlite
    const tuple = `(${COLUMNS.map(() => '?').join(', ')})`
    const insert = (rows) =>
      sqlite.prepare(
        `insert into webhook_notifications (${COLUMNS.join(', ')}) values ${Array(rows).fill(tuple).join(', ')}`,
      )
    const full = insert(BATCH)
    sqlite.transaction(() => {
      for (let i = 0; i < n; i += BATCH) {
        const end = Math.min(n, i + BATCH)
        const values = []
        for (let j = i; j < end; j++) {
          const r = row(j, now)
          for (const c of COLUMNS) values.push(r[c])
        }
        ;(end - i === BATCH ? full : insert(end - i)).run(values)
      }
    })()
    sqlite.pragma('wal_checkpoint(TRUNCATE)')
  }
  const [r] = await db.all(
    "select min(id) as lo, max(id) as hi, count(*) as n from webhook_notifications where folder = 'bench-backlog' and id > $1",
    [Number(before.hi)],
  )
  return { lo: Number(r.lo), hi: Number(r.hi), count: Number(r.n), insertedAt: now }
}

/** Notifications of the backlog not yet delivered (pending, failed or dropped). */
export async function undelivered(db, range) {
  const [r] = await db.all(
    "select count(*) as n from webhook_notifications where id between $1 and $2 and state <> 'delivered'",
    [range.lo, range.hi],
  )
  return Number(r.n)
}

/**
 * What the delivery log says of the backlog: attempts, successful ones, notifications with more
 * than one attempt, and when the last notification was marked delivered (Wharf's clock, ms).
 */
export async function deliveryFacts(db, range) {
  const [a] = await db.all(
    `select count(*) as attempts, sum(success) as ok, count(distinct notification_id) as notifications
     from webhook_attempts where notification_id between $1 and $2`,
    [range.lo, range.hi],
  )
  const [n] = await db.all(
    `select sum(case when state = 'delivered' then 1 else 0 end) as delivered,
            sum(case when attempts = 1 then 1 else 0 end) as once, max(updated_at) as last
     from webhook_notifications where id between $1 and $2`,
    [range.lo, range.hi],
  )
  return {
    attempts: Number(a.attempts),
    succeeded: Number(a.ok ?? 0),
    notifications: Number(a.notifications),
    delivered: Number(n.delivered ?? 0),
    attemptedOnce: Number(n.once ?? 0),
    lastDeliveredAt: Number(n.last),
  }
}

/**
 * PostgreSQL: the CPU seconds of the run database's other backends (Wharf's connections), read
 * from /proc (the database runs on this machine), by backend pid. Undefined on SQLite.
 */
export async function backendCpu(db) {
  if (!db.pool) return undefined
  const rows = await db.all(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  )
  const out = new Map()
  for (const { pid } of rows) {
    const s = await cpuSeconds(pid)
    if (s !== null) out.set(pid, s)
  }
  return out
}

/** CPU seconds the backends spent between two readings of backendCpu (new backends count whole). */
export function backendCpuSpent(before, after) {
  let sum = 0
  for (const [pid, s] of after) sum += s - (before.get(pid) ?? 0)
  return sum
}

/**
 * PostgreSQL: transactions committed or rolled back in the run's database so far: with every
 * statement of the dispatcher its own transaction, its round trips that write. A backend reports
 * them when it ends, so read after Wharf stopped.
 */
export async function transactions(db) {
  if (!db.pool) return undefined
  const [r] = await db.all(
    'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
  )
  return Number(r.n)
}
