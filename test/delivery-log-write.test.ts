import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'
import { dialectOf } from '../src/db/dialects/dialect-of.js'
import { LeasedJobs } from '../src/jobs/leased-jobs.js'
import {
  type AttemptRow,
  type LogTarget,
  type NextState,
  writeAttempts,
} from '../src/webhooks/delivery-log-sql.js'
import { claimNotifications } from '../src/webhooks/outbox-claims.js'
import { dialects } from './helpers/server.js'

const NOW = 1_764_000_000_000
const url = process.env['TEST_DATABASE_URL']

/**
 * The delivery log is written one fast way per database (SQLite's connection itself, a prepared
 * statement on PostgreSQL) and one plain way (Kysely) where those are not to be had: both write
 * the same records and states, and neither touches a notification another worker holds.
 */
describe.each(dialects)('the delivery log’s two ways of writing (%s)', (dialect) => {
  let h: DatabaseHandle
  let dataDir: string
  let siteId: number
  const schema = `t_log_${crypto.randomBytes(4).toString('hex')}`

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-log-write-'))
    h = openDatabase(dialect === 'postgres' ? { url, dataDir, schema } : { dataDir })
    await h.migrate()
    const site = await h.db
      .insertInto('sites')
      .values({ name: 'log', signing_secret: 'x', created_at: NOW })
      .returning('id')
      .executeTakeFirstOrThrow()
    siteId = Number(site.id)
  })

  afterAll(async () => {
    await h?.close()
    if (dialect === 'postgres') {
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      await admin.query(`drop schema if exists ${schema} cascade`)
      await admin.end()
    }
    await fs.rm(dataDir, { recursive: true, force: true })
  })

  /** `n` new notifications, claimed by a worker: the worker's name and the notifications. */
  async function claimed(n: number): Promise<{ owner: string; ns: { id: number; path: string }[] }> {
    const tag = crypto.randomBytes(4).toString('hex')
    await h.db
      .insertInto('webhook_notifications')
      .values(
        Array.from({ length: n }, (_, i) => ({
          site_id: siteId,
          message_id: `${tag}-${i}`,
          operation: 'Upload',
          user_id: null,
          username: 'admin',
          protocol: 'restapi',
          path: `${tag}/file-${i}.txt`,
          sourcepath: '',
          folder: tag,
          state: 'pending' as const,
          max_attempts: 0,
          next_attempt_at: NOW,
          created_at: NOW,
          updated_at: NOW,
        })),
      )
      .execute()
    const jobs = new LeasedJobs(h.db, dialectOf(h.db), 'webhook_notifications', {
      leaseMs: 60_000,
      now: () => NOW,
    })
    const rows = await claimNotifications(jobs, 'first', n)
    expect(rows.every((r) => r.path.startsWith(`${tag}/`))).toBe(true)
    return { owner: jobs.owner, ns: rows.map((r) => ({ id: Number(r.id), path: r.path })) }
  }

  const attempt = (n: { id: number; path: string }, i: number): AttemptRow => ({
    site_id: siteId,
    notification_id: n.id,
    attempt: 1 + (i % 3),
    created_at: NOW + i,
    user_id: null,
    operation: 'Upload',
    status: i % 2 ? 500 : 204,
    message: i % 2 ? 'Server Error, "quoted"\nand a line' : 'OK',
    success: i % 2 ? 0 : 1,
    request_headers: '{"a":"b"}',
    request_method: 'POST',
    request_url: 'http://127.0.0.1:9/hook',
    request_body: `{"path":"${n.path}"}`,
    path: n.path,
    folder: n.path.split('/')[0]!,
    response_size: i * 10,
    response_body: 'ü'.repeat(i % 5),
    duration_ms: i,
    behavior_id: null,
  })
  const state = (n: { id: number }, i: number): NextState => ({
    id: n.id,
    attempts: 1 + (i % 3),
    state: i % 2 ? 'pending' : 'delivered',
    next: i % 2 ? NOW + 60_000 : null,
    now: NOW + i,
  })

  /** What was written for these notifications, without the ids that differ between runs. */
  async function written(ns: { id: number }[]) {
    const ids = ns.map((n) => n.id)
    const attempts = await h.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('notification_id', 'in', ids)
      .orderBy('created_at')
      .execute()
    const states = await h.db
      .selectFrom('webhook_notifications')
      .select(['attempts', 'state', 'next_attempt_at', 'lease_owner', 'lease_until', 'updated_at'])
      .where('id', 'in', ids)
      .orderBy('id')
      .execute()
    return {
      attempts: attempts.map(
        ({ id: _id, notification_id: _n, path: _p, folder: _f, request_body: _b, ...a }) => ({
          ...a,
          site_id: Number(a.site_id),
          created_at: Number(a.created_at),
          response_size: Number(a.response_size),
        }),
      ),
      states: states.map((s) => ({
        ...s,
        next_attempt_at: s.next_attempt_at === null ? null : Number(s.next_attempt_at),
        updated_at: Number(s.updated_at),
      })),
    }
  }

  it('writes the same records and states the fast way and the plain way', async () => {
    const fast: LogTarget = { db: h.db, raw: h.sqlite, prepared: h.prepared }
    const plain: LogTarget = { db: h.db }
    expect(fast.raw ?? fast.prepared).toBeDefined()
    const results: Awaited<ReturnType<typeof written>>[] = []
    for (const [way, target] of [
      ['fast', fast],
      ['plain', plain],
    ] as const) {
      const { owner, ns } = await claimed(70)
      expect(ns, way).toHaveLength(70)
      const returned = await writeAttempts(target, owner, ns.map(attempt), ns.map(state))
      expect(returned.map((r) => r.notification_id).sort((a, b) => a - b)).toEqual(
        ns.map((n) => n.id).sort((a, b) => a - b),
      )
      for (const r of returned) expect(typeof r.id).toBe('number')
      results.push(await written(ns))
    }
    expect(results[0]!.attempts).toHaveLength(70)
    expect(results[0]!.states.filter((s) => s.state === 'delivered')).toHaveLength(35)
    expect(results[0]!.states.every((s) => s.lease_owner === null && s.lease_until === null)).toBe(true)
    expect(results[1]).toEqual(results[0])
  })

  it('leaves a notification another worker holds as it is, either way', async () => {
    for (const target of [{ db: h.db, raw: h.sqlite, prepared: h.prepared }, { db: h.db }] as LogTarget[]) {
      const { owner, ns } = await claimed(2)
      await writeAttempts(target, 'not the holder', ns.map(attempt), ns.map(state))
      const rows = await h.db
        .selectFrom('webhook_notifications')
        .select(['state', 'lease_owner'])
        .where(
          'id',
          'in',
          ns.map((n) => n.id),
        )
        .execute()
      expect(rows).toEqual([
        { state: 'pending', lease_owner: owner },
        { state: 'pending', lease_owner: owner },
      ])
    }
  })
})
