import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'
import { dialectOf } from '../src/db/dialects/dialect-of.js'
import { LeasedJobs } from '../src/jobs/leased-jobs.js'
import { writeAttempts } from '../src/webhooks/delivery-log-sql.js'
import { claimNotifications } from '../src/webhooks/outbox-claims.js'

const url = process.env['TEST_DATABASE_URL']
const NOW = 1_764_000_000_000
const ROWS = 400

/**
 * What every delivery writes on PostgreSQL, kept cheap: a claim sets only the lease, which no
 * index holds, so with room left on the page (fillfactor 40) it is a heap-only update; the
 * delivery log has no foreign keys to check and lock on each insert.
 */
describe.skipIf(!url)('the outbox’s writes on PostgreSQL', () => {
  let admin: pg.Client
  let dataDir: string
  let h: DatabaseHandle
  const schema = `t_outbox_${crypto.randomBytes(4).toString('hex')}`

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-outbox-writes-'))
    h = openDatabase({ url, dataDir, schema })
    await h.migrate()
    const site = await h.db
      .insertInto('sites')
      .values({ name: 'outbox', signing_secret: 'x', created_at: NOW })
      .returning('id')
      .executeTakeFirstOrThrow()
    // Enough rows to fill several pages: without free room a page's rows cannot be updated in place.
    await sql`insert into webhook_notifications (site_id, message_id, operation, user_id, username,
        protocol, path, sourcepath, folder, state, max_attempts, next_attempt_at, created_at, updated_at)
      select ${site.id}, md5(g::text), 'Upload', null, 'admin', 'restapi', 'inbox/file-' || g || '.txt',
        '', 'inbox', 'pending', 0, ${NOW}, ${NOW}, ${NOW} from generate_series(1, ${ROWS}) g`.execute(h.db)
  })

  afterAll(async () => {
    await h?.close()
    await admin.query(`drop schema if exists ${schema} cascade`)
    await admin.end()
    await fs.rm(dataDir, { recursive: true, force: true })
  })

  it('claims notifications with heap-only updates, the oldest first', async () => {
    const hot = await h.db.transaction().execute(async (trx) => {
      const jobs = new LeasedJobs(trx, dialectOf(trx), 'webhook_notifications', {
        leaseMs: 60_000,
        now: () => NOW,
      })
      const rows = await claimNotifications(jobs, 'first', 50)
      expect(rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      )
      const counted = await sql<{ hot: string; all: string }>`select
          pg_stat_get_xact_tuples_hot_updated('webhook_notifications'::regclass) as hot,
          pg_stat_get_xact_tuples_updated('webhook_notifications'::regclass) as all`.execute(trx)
      return counted.rows[0]!
    })
    expect(Number(hot.all)).toBe(50)
    expect(Number(hot.hot)).toBe(50)
  })

  it('logs an attempt without a key check on its notification or site', async () => {
    const constraints = await sql<{ conname: string; contype: string }>`
      select conname, contype from pg_constraint where conrelid = 'webhook_attempts'::regclass`.execute(h.db)
    expect(constraints.rows.map((c) => c.contype)).toEqual(['p'])
    // The write still applies only to a notification this worker holds.
    const jobs = new LeasedJobs(h.db, dialectOf(h.db), 'webhook_notifications', {
      leaseMs: 60_000,
      now: () => NOW,
    })
    const [row] = await claimNotifications(jobs, 'first', 1)
    const attempt = {
      site_id: row!.site_id,
      notification_id: row!.id,
      attempt: 1,
      created_at: NOW,
      user_id: null,
      operation: 'Upload',
      status: 204,
      message: 'OK',
      success: 1,
      request_headers: '{}',
      request_method: 'POST',
      request_url: 'http://127.0.0.1:9/hook',
      request_body: '{}',
      path: row!.path,
      folder: row!.folder,
      response_size: 0,
      response_body: '',
      duration_ms: 1,
      behavior_id: null,
    }
    const state = { id: Number(row!.id), attempts: 1, state: 'delivered' as const, next: null, now: NOW }
    const target = { db: h.db }
    await writeAttempts(target, 'another worker', [attempt], [state])
    const before = await h.db
      .selectFrom('webhook_notifications')
      .select('state')
      .where('id', '=', row!.id)
      .executeTakeFirstOrThrow()
    expect(before.state).toBe('pending')
    await writeAttempts(target, jobs.owner, [attempt], [state])
    const after = await h.db
      .selectFrom('webhook_notifications')
      .select('state')
      .where('id', '=', row!.id)
      .executeTakeFirstOrThrow()
    expect(after.state).toBe('delivered')
  })

  it('gives a delivered notification’s new row version a B-tree entry only beside the claim’s own indexes', async () => {
    // The update that ends a delivery changes what the partial due indexes hold, so it is never
    // heap-only: each B-tree of the table takes an entry for it. Only the primary key and the
    // claim's partial indexes (a delivered row enters none of them) are B-trees; retention's index by age is a block-range summary.
    const indexes = await sql<{ name: string; method: string; definition: string }>`
      select c.relname as name, am.amname as method, pg_get_indexdef(i.indexrelid) as definition
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
      where i.indrelid = 'webhook_notifications'::regclass order by c.relname`.execute(h.db)
    expect(indexes.rows.map((r) => [r.name, r.method])).toEqual([
      ['webhook_notifications_created', 'brin'],
      ['webhook_notifications_due_first', 'btree'],
      ['webhook_notifications_due_retry', 'btree'],
      // File-aware notifications' versions, for the janitor: only the rows that name one.
      ['webhook_notifications_file_blob', 'btree'],
      // Per-path ordering's look-up of older pending notifications: pending rows only too.
      ['webhook_notifications_order', 'btree'],
      ['webhook_notifications_pkey', 'btree'],
      // An endpoint's waiting (pending or held) notifications.
      ['webhook_notifications_site_behavior', 'btree'],
    ])
    for (const r of indexes.rows.filter((r) => /_due_|_order|_file_blob|_site_behavior/.test(r.name)))
      expect(r.definition).toMatch(/WHERE/)
    // Retention still finds old rows through the summary, not by reading the whole table.
    // (A table this small is read whole by choice; with that choice taken away, the index serves.)
    const plan = await h.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx)
      return sql<{ 'QUERY PLAN': string }>`explain select id from webhook_notifications
        where created_at < ${NOW - 1} and state in ('delivered', 'failed', 'dropped') limit 10`.execute(trx)
    })
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(
      /Bitmap Index Scan on webhook_notifications_created/,
    )
  })
})
