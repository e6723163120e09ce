import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'csv-parse/sync'
import { CompiledQuery } from 'kysely'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import { copyCsvInOneSnapshot } from '../src/db/copy-csv.js'
import type { ExportJob } from '../src/exports/export-kind.js'
import { webhookLogSource } from '../src/exports/webhook-log-export.js'
import { ADMIN_USERNAME, useServer } from './helpers/server.js'
import { insertNotification, logJob } from './helpers/webhook-log-fixtures.js'

/**
 * On PostgreSQL a webhook-log export is built in two halves at once: two COPY statements on two
 * connections, reading one snapshot. The two files together must hold the same bytes, in the same
 * order, as the one-statement build of the same records, whatever the fields hold and whatever the
 * query; a failed or stopped half must close both connections.
 */

const AWKWARD = [
  'plain',
  'a,b',
  'say "hi"',
  '"',
  'line\nbreak',
  'cr\rhere',
  'crlf\r\nend',
  '',
  ' spaced ',
  '{}',
]
const START = Date.UTC(2026, 0, 1)
const RECORDS = 1200

describe.skipIf(!process.env['TEST_DATABASE_URL'])(
  'webhook-log export built in two halves (postgres)',
  () => {
    const s = useServer('postgres')
    let dir: string
    const header = Buffer.from('header\r\n')
    beforeAll(async () => {
      dir = await fs.mkdtemp(path.join(s.container.config.dataDir, 'halves-'))
      const notification = await insertNotification(s, {
        message_id: 'msg-halves',
        username: ADMIN_USERNAME,
        path: 'left/a',
        folder: 'left',
      })
      const rows = Array.from({ length: RECORDS }, (_, i) => {
        const text = AWKWARD[i % AWKWARD.length]!
        // The records of `right` lie in one stretch of the ids: a query for them splits that stretch.
        const folder = i >= 500 && i < 700 ? 'right' : 'left'
        return {
          site_id: s.container.site.id,
          notification_id: notification,
          attempt: i + 1,
          created_at: START + i * 1000,
          user_id: null,
          operation: 'Upload',
          status: i % 3 ? 500 : 28,
          message: i === 777 ? 'the only "needle"\r\nhere' : text,
          success: i % 2,
          request_headers: JSON.stringify({ 'X-Test': text }),
          request_method: 'POST',
          request_url: `https://hooks.example.com/${text}`,
          request_body: JSON.stringify({ path: `${folder}/${text}`, attempt: i }),
          path: `${folder}/${text}`,
          folder,
          response_size: i * 7,
          // One field larger than a block of the reader (1 MiB).
          response_body: i === 300 ? `${'x,"\n'.repeat(400_000)}end` : text,
          duration_ms: 1,
        }
      })
      for (let i = 0; i < rows.length; i += 200) {
        await s.container.db
          .insertInto('webhook_attempts')
          .values(rows.slice(i, i + 200))
          .execute()
      }
    }, 60_000)

    const job = (query: Record<string, unknown>, range: Partial<ExportJob> = {}) => logJob(s, query, range)

    async function oneStatement(j: ExportJob): Promise<{ csv: string; count: number }> {
      const parts: Buffer[] = [header]
      let count = 0
      for await (const page of webhookLogSource(s.container.database).pages(
        j,
        5000,
        new AbortController().signal,
      )) {
        if (Array.isArray(page)) throw new Error('expected blocks of CSV')
        parts.push(page.csv)
        count += page.count
      }
      return { csv: Buffer.concat(parts).toString(), count }
    }

    async function twoHalves(j: ExportJob, pageSize = 1, signal = new AbortController().signal) {
      const writer = await webhookLogSource(s.container.database).halves!(j, pageSize, signal, header)
      if (!writer) return null
      const files = [path.join(dir, `a-${Math.random()}`), path.join(dir, `b-${Math.random()}`)]
      const count = await writer.write(files)
      const [a, b] = [await fs.readFile(files[0]!), await fs.readFile(files[1]!)]
      const records = (csv: Buffer) => (parse(csv, { relax_column_count: true }) as string[][]).length
      return {
        csv: Buffer.concat([a, b]).toString(),
        count,
        // Records in each file (the first holds the header).
        split: [records(a) - 1, records(b)],
      }
    }

    /** The snapshot of the one-statement build, then the two halves', compared byte for byte. */
    async function same(j: ExportJob) {
      const expected = await oneStatement(j)
      const got = await twoHalves(j)
      expect(got).not.toBeNull()
      expect(got!.count).toBe(expected.count)
      expect(got!.csv === expected.csv, 'the two halves differ from the one-statement build').toBe(true)
      expect(got!.split[0]! + got!.split[1]!).toBe(expected.count)
      return { expected, got: got! }
    }

    it('writes what one statement writes, with quotes, CR and LF in the fields', async () => {
      const { expected, got } = await same(job({}))
      expect(expected.count).toBe(RECORDS)
      expect(expected.csv).toContain('"crlf\r\nend"')
      expect(expected.csv).toContain('"say ""hi"""')
      // Two halves of about the same size.
      expect(got.split[0]).toBeGreaterThan(500)
      expect(got.split[1]).toBeGreaterThan(500)
    })

    it('splits the records a query matches, not the range of ids', async () => {
      const { expected, got } = await same(job({ query_folder: 'right' }))
      expect(expected.count).toBe(200)
      expect(got.split[0]).toBeGreaterThan(70)
      expect(got.split[1]).toBeGreaterThan(70)
      const left = await same(job({ query_folder: 'left', query_status: '500' }))
      expect(left.expected.count).toBe(667)
    })

    it('writes what one statement writes for a time range, one record, and none', async () => {
      const range = { start_at: START + 100_000, end_at: START + 900_000 }
      expect((await same(job({ query_message: 'say "hi",cr\rhere' }, range))).expected.count).toBe(160)
      const one = await same(job({ query_message: 'needle' }))
      expect(one.expected.count).toBe(1)
      expect(one.expected.csv).toContain('"the only ""needle""\r\nhere"')
      const none = await same(job({ query_message: 'no record says this' }))
      expect(none.expected.count).toBe(0)
      expect(none.got.csv).toBe(header.toString())
    })

    it('leaves small exports, and exports of no records, to one statement', async () => {
      expect(await twoHalves(job({}), 5000)).toBeNull()
      expect(await twoHalves(job({}, { site_id: s.container.site.id + 1000 }))).toBeNull()
      expect(await oneStatement(job({}, { site_id: s.container.site.id + 1000 }))).toEqual({
        csv: header.toString(),
        count: 0,
      })
    })

    // The connections of a failed or stopped build must never go back to the pool mid-COPY, where
    // the next statement would read the rest of its rows.
    async function poolStillAnswers() {
      // More statements at once than the pool has connections, so every connection serves one.
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => s.container.database.queryArrays(`select ${i} + 1`, [])),
      )
      expect(answers.map((a) => a[0]![0])).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    }
    const manyRows = CompiledQuery.raw(
      "select g, repeat('x', 1000) || E'\\n' || g from generate_series(1, 20000) g order by g",
    )

    it('closes both connections when a half fails, is left unread, or the build is stopped', async () => {
      const copy = s.container.database.copyCsvInOneSnapshot!
      const failing = CompiledQuery.raw('select 1 / (g - 15000) from generate_series(1, 20000) g')
      const readAll = async (blocks: AsyncIterable<unknown>[]) => {
        await Promise.all(
          blocks.map(async (b) => {
            for await (const _ of b);
          }),
        )
      }
      await expect(copy([manyRows, failing], new AbortController().signal, readAll)).rejects.toMatchObject({
        code: '22012',
      })
      await poolStillAnswers()
      // Only one block of each read.
      await copy([manyRows, manyRows], new AbortController().signal, async (blocks) => {
        for (const b of blocks) for await (const _ of b) break
      })
      await poolStillAnswers()
      const stop = new AbortController()
      setTimeout(() => stop.abort(new Error('lease lost')), 20)
      await expect(
        copy([manyRows, manyRows], stop.signal, async (blocks) => {
          await new Promise((r) => setTimeout(r, 100))
          await readAll(blocks)
        }),
      ).rejects.toThrow('lease lost')
      await poolStillAnswers()
      // And the halves of an export, through the builder's writer.
      const stopped = new AbortController()
      stopped.abort(new Error('stopped before it began'))
      await expect(twoHalves(job({}), 1, stopped.signal)).rejects.toThrow('stopped before it began')
      await poolStillAnswers()
    })

    it('fails the export with the reason when a half cannot write its file', async () => {
      const writer = await webhookLogSource(s.container.database).halves!(
        job({}),
        1,
        new AbortController().signal,
        header,
      )
      const files = [path.join(dir, 'fine'), path.join(dir, 'no-such-folder', 'second')]
      await expect(writer!.write(files)).rejects.toMatchObject({ code: 'ENOENT' })
      await poolStillAnswers()
    })

    it('reads every statement in one snapshot: a commit between them is seen by none', async () => {
      const url = process.env['TEST_DATABASE_URL']!
      const table = `snapshot_${crypto.randomBytes(6).toString('hex')}`
      const pool = new pg.Pool({ connectionString: url, max: 4 })
      try {
        await pool.query(`create table ${table} (n int)`)
        await pool.query(`insert into ${table} values (1), (2)`)
        // A pool whose second connection, just before it takes the first one's snapshot, commits
        // a third row from a connection of its own.
        let taken = 0
        const racing = {
          connect: async () => {
            const c = await pool.connect()
            if (++taken % 2 === 0) {
              const patched = c as unknown as Record<string, unknown>
              patched['query'] = async (text: string) => {
                delete patched['query']
                await pool.query(`insert into ${table} values (3)`)
                return c.query(text)
              }
            }
            return c
          },
        } as unknown as pg.Pool
        const count = `copy (select count(*) from ${table}) to stdout (format csv)`
        const counts = await copyCsvInOneSnapshot(
          racing,
          [count, count],
          new AbortController().signal,
          (blocks) =>
            Promise.all(
              blocks.map(async (b) => {
                let text = ''
                for await (const block of b) text += block.csv.toString()
                return text
              }),
            ),
        )
        expect(taken).toBe(2)
        expect(counts).toEqual(['2\r\n', '2\r\n'])
        expect((await pool.query(`select count(*)::int as n from ${table}`)).rows[0].n).toBe(3)
      } finally {
        await pool.query(`drop table if exists ${table}`)
        await pool.end()
      }
    })
  },
)
