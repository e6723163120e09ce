import crypto from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { dialects, useServer } from './helpers/server.js'
import {
  expectCsvMatches,
  getResults,
  iso,
  readyExport,
  seedLog,
  seedMany,
  walkResults,
} from './helpers/webhook-log-fixtures.js'

/** Paging through an export's results: forward only, per_page from 1 to 10,000, signed cursors. */

const tag = (p: string) => `${p}-${crypto.randomBytes(4).toString('hex')}`
const DAY = 86_400_000

describe.each(dialects)('webhook-log exports: paging the results (%s)', (dialect) => {
  const admin = () => ({ key: s.adminKey })

  // The build reads the log a few records at a time: exports here span many of its steps.
  const s = useServer(dialect, { EXPORT_PAGE_SIZE: '7' })

  it('pages with per_page=1 through X-Service-Cursor-Next, never with a previous-page header', async () => {
    const folder = tag('paging')
    const seeded = await seedLog(
      s,
      Array.from({ length: 5 }, (_, i) => ({
        path: `${folder}/f${i}.txt`,
        createdAt: Date.now() - i * 1000,
      })),
    )
    const e = await readyExport(s, { query_folder: folder }, admin())
    const { rows, responses } = await walkResults(s, e.id, admin(), 1)
    expect(rows.map((x) => x.id)).toEqual(seeded.map((x) => x.id))
    expect(responses.map((x) => x.body.length)).toEqual([1, 1, 1, 1, 1])
    for (const [i, res] of responses.entries()) {
      const h = res.headers
      expect(h.get('X-Service-Cursor-Prev'), `page ${i + 1}`).toBeNull()
      expect(h.get('X-Files-Cursor-Prev'), `page ${i + 1}`).toBeNull()
      if (i < responses.length - 1) {
        expect(h.get('X-Service-Cursor-Next')).toEqual(expect.any(String))
        expect(h.get('X-Files-Cursor-Next')).toBe(h.get('X-Service-Cursor-Next'))
        expect(h.get('X-Files-Cursor')).toBe(h.get('X-Service-Cursor-Next'))
      } else {
        expect([
          h.get('X-Service-Cursor-Next'),
          h.get('X-Files-Cursor-Next'),
          h.get('X-Files-Cursor'),
        ]).toEqual([null, null, null])
      }
    }
    // The same walk through the Files.com alias.
    const viaAlias: number[] = []
    let cursor: string | null = null
    for (let i = 0; i < 10; i++) {
      const r = await getResults(s, e.id, admin(), { per_page: 1, ...(cursor ? { cursor } : {}) })
      expect(r.status, r.text).toBe(200)
      viaAlias.push(...r.body.map((x: any) => x.id))
      cursor = r.headers.get('X-Files-Cursor-Next')
      if (!cursor) break
    }
    expect(viaAlias).toEqual(seeded.map((x) => x.id))
  })

  it('gives 1,000 records a page by default and up to 10,000 with per_page', async () => {
    const folder = tag('many')
    const start = Math.floor((Date.now() - 2 * DAY) / 1000) * 1000
    const ids = await seedMany(s, folder, 1001, start)
    const e = await readyExport(s, { query_folder: folder }, admin())
    const first = await getResults(s, e.id, admin())
    expect(first.status).toBe(200)
    expect(first.body.map((x: any) => x.id)).toEqual(ids.slice(0, 1000))
    const next = first.headers.get('X-Service-Cursor-Next')
    expect(next).toEqual(expect.any(String))
    const second = await getResults(s, e.id, admin(), { cursor: next! })
    expect(second.body.map((x: any) => x.id)).toEqual(ids.slice(1000))
    expect(second.headers.get('X-Service-Cursor-Next')).toBeNull()

    const all = await getResults(s, e.id, admin(), { per_page: 10_000 })
    expect(all.status).toBe(200)
    expect(all.body.map((x: any) => x.id)).toEqual(ids)
    expect(all.headers.get('X-Service-Cursor-Next')).toBeNull()
    expect(all.headers.get('X-Files-Cursor')).toBeNull()
    await expectCsvMatches(e.results_url, all.body)

    // A time range in the middle: attempts 101 to 900 (record i was sent at start + i s).
    const middle = await readyExport(
      s,
      { query_folder: folder, start_at: iso(start + 101_000), end_at: iso(start + 901_000) },
      admin(),
    )
    const { rows, responses } = await walkResults(s, middle.id, admin(), 300)
    expect(rows.map((x) => x.id)).toEqual(ids.slice(100, 900))
    expect(responses.map((r) => r.body.length)).toEqual([300, 300, 200])
  })

  it('refuses a bad per_page and a bad or foreign cursor', async () => {
    const folder = tag('badpage')
    await seedLog(s, [{ path: `${folder}/a.txt` }, { path: `${folder}/b.txt` }])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const other = await readyExport(s, { query_folder: folder }, admin())
    for (const per of ['0', '-1', '10001', '1.5', 'abc']) {
      const r = await getResults(s, e.id, admin(), { per_page: per })
      expect({ per, status: r.status, type: r.body?.type }).toEqual({
        per,
        status: 400,
        type: 'bad-request/request-params-invalid',
      })
    }
    const page = await getResults(s, e.id, admin(), { per_page: 1 })
    const cursor = page.headers.get('X-Service-Cursor-Next')!
    expect(cursor).toEqual(expect.any(String))
    const flipped = `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}`
    for (const bad of ['garbage', flipped]) {
      const r = await getResults(s, e.id, admin(), { per_page: 1, cursor: bad })
      expect({ status: r.status, type: r.body?.type }).toEqual({
        status: 400,
        type: 'bad-request/invalid-cursor',
      })
    }
    // A cursor of one export does not page another, even over the same records.
    const foreign = await getResults(s, other.id, admin(), { per_page: 1, cursor })
    expect({ status: foreign.status, type: foreign.body?.type }).toEqual({
      status: 400,
      type: 'bad-request/invalid-cursor',
    })
    const good = await getResults(s, e.id, admin(), { per_page: 1, cursor })
    expect(good.status).toBe(200)
    expect(good.body).toHaveLength(1)
  })
})
