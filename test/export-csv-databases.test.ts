import { CompiledQuery } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_USERNAME, type TestServer, useServer } from './helpers/server.js'
import { fetchCsv, insertNotification, readyExport } from './helpers/webhook-log-fixtures.js'

/**
 * SQLite builds an export's CSV in SQL, PostgreSQL has the database write it (COPY): the same
 * log records must give the same bytes on both, whatever the fields hold, across blocks and with
 * a field larger than a block.
 */

const AWKWARD = [
  '',
  'plain',
  'a,b',
  'say "hi"',
  '"',
  '""',
  'line\nbreak',
  '\n',
  'cr\rhere',
  'crlf\r\nend',
  'trailing\r',
  '\\.',
  'back\\slash \\N',
  'tab\there',
  ' spaced ',
  'null',
  'NULL',
  '{}',
  'héllo ✓ 日本',
]

/** The same records for either database: ids, times and texts fixed, the site's id its own. */
function records(siteId: number, notificationId: number) {
  const rows = []
  let id = 1
  // Past a block of the PostgreSQL reader (1 MiB): many ordinary records, then one larger field.
  for (let i = 0; i < 2500; i++) {
    const text = AWKWARD[i % AWKWARD.length]!
    rows.push({
      id: id++,
      site_id: siteId,
      notification_id: notificationId,
      attempt: i + 1,
      created_at: Date.UTC(2025, 0, 2, 3, 4, 5) + i * 1001,
      user_id: null,
      operation: i % 2 ? 'Create Folder' : text,
      status: i % 3 ? 500 : 28,
      message: text,
      success: i % 2,
      request_headers: JSON.stringify({ 'X-Test': text, 'Content-Type': 'application/json' }),
      request_method: 'POST',
      request_url: `https://hooks.example.com/${text}`,
      request_body: JSON.stringify({ path: `dir/${text}`, attempt: i }),
      path: `dir/${text}`,
      folder: i % 5 ? 'dir' : '',
      response_size: i * 7,
      response_body: i === 1700 ? `${'x,"\n'.repeat(400_000)}end` : text,
      duration_ms: 1,
    })
  }
  return rows
}

describe.skipIf(!process.env['TEST_DATABASE_URL'])('webhook-log CSV on SQLite and PostgreSQL', () => {
  const servers = (['sqlite', 'postgres'] as const).map((dialect) =>
    useServer(dialect, { EXPORT_PAGE_SIZE: '300' }),
  )
  beforeAll(async () => {
    for (const s of servers) {
      const notification = await insertNotification(s, {
        message_id: 'msg-both-databases',
        username: ADMIN_USERNAME,
        path: 'dir/a',
        folder: 'dir',
      })
      const rows = records(s.container.site.id, notification)
      for (let i = 0; i < rows.length; i += 200) {
        await s.container.db
          .insertInto('webhook_attempts')
          .values(rows.slice(i, i + 200))
          .execute()
      }
    }
  }, 60_000)

  async function csvOf(s: TestServer, body: Record<string, unknown>) {
    const e = await readyExport(s, body, { key: s.adminKey })
    expect(e.status).toBe('ready')
    const res = await fetchCsv(e.results_url)
    expect(res.status).toBe(200)
    return res.text
  }

  it('exports the same records as the same bytes', async () => {
    const [sqlite, postgres] = servers as [TestServer, TestServer]
    const a = await csvOf(sqlite, {})
    const b = await csvOf(postgres, {})
    // Header, 2,500 records, CRLF after each; a field with line breaks keeps them as they are.
    expect(a.length).toBeGreaterThan(1_600_000)
    expect(a.startsWith('id,created_at,status,')).toBe(true)
    expect(b.length).toBe(a.length)
    expect(b === a, 'the PostgreSQL CSV differs from the SQLite CSV').toBe(true)
  }, 60_000)

  it('exports the same bytes for a query and a time range', async () => {
    const [sqlite, postgres] = servers as [TestServer, TestServer]
    const body = {
      query_message: 'say "hi",a,b',
      query_status: '500',
      start_at: '2025-01-02T03:10:00Z',
      end_at: '2025-01-02T03:40:00Z',
    }
    const a = await csvOf(sqlite, body)
    const b = await csvOf(postgres, body)
    expect(a.split('\r\n').length).toBeGreaterThan(10)
    expect(b === a, 'the PostgreSQL CSV differs from the SQLite CSV').toBe(true)
  }, 60_000)

  // COPY through the driver's protocol parser (db/copy-csv.ts): a connection left mid-COPY must
  // never go back to the pool, where the next statement would read the rest of the rows.
  const manyRows = CompiledQuery.raw(
    "select g, repeat('x', 1000) || E'\\n' || g from generate_series(1, 20000) g order by g",
  )
  async function poolStillAnswers(s: TestServer) {
    // More statements at once than the pool has connections, so every connection serves one.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.container.database.queryArrays(`select ${i} + 1`, [])),
    )
    expect(answers.map((a) => a[0]![0])).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
  }

  it('reads a COPY as blocks of records ending in CRLF, a row per record whatever LFs it holds', async () => {
    const postgres = servers[1]!
    let text = ''
    let count = 0
    let blocks = 0
    for await (const b of postgres.container.database.copyCsv!(manyRows, new AbortController().signal)) {
      text += b.csv.toString()
      count += b.count
      blocks++
    }
    expect(count).toBe(20000)
    expect(blocks).toBeGreaterThan(10)
    const x = 'x'.repeat(1000)
    const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1},"${x}\n${i + 1}"\r\n`).join('')
    expect(text === expected).toBe(true)
    await poolStillAnswers(postgres)
  })

  it('closes, rather than pools, a connection whose COPY was left early or failed', async () => {
    const postgres = servers[1]!
    const handle = postgres.container.database
    for (let i = 0; i < 3; i++) {
      for await (const b of handle.copyCsv!(manyRows, new AbortController().signal)) {
        expect(b.count).toBeGreaterThan(0)
        break
      }
    }
    await poolStillAnswers(postgres)
    const failing = CompiledQuery.raw('select 1 / (g - 15000) from generate_series(1, 20000) g')
    const read = async () => {
      for await (const _ of handle.copyCsv!(failing, new AbortController().signal));
    }
    await expect(read()).rejects.toMatchObject({ code: '22012' })
    const stop = new AbortController()
    stop.abort(new Error('stopped'))
    await expect(
      (async () => {
        for await (const _ of handle.copyCsv!(manyRows, stop.signal));
      })(),
    ).rejects.toThrow('stopped')
    await poolStillAnswers(postgres)
  })
})
