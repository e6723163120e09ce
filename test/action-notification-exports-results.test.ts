import crypto from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { dialects, useServer } from './helpers/server.js'
import {
  expectCsvMatches,
  expectedResult,
  expectLinkRefused,
  fetchCsv,
  getExport,
  getResults,
  JSON_RESULT_FIELDS,
  RESULT_FIELDS,
  readyExport,
  seedLog,
  tamperedUrls,
} from './helpers/webhook-log-fixtures.js'

/** Results of a ready export: the records, paging, the CSV behind `results_url` and its signature. */

const tag = (p: string) => `${p}-${crypto.randomBytes(4).toString('hex')}`
const DAY = 86_400_000

describe.each(dialects)('webhook-log exports: results and CSV (%s)', (dialect) => {
  let skew = 0
  const admin = () => ({ key: s.adminKey })

  const s = useServer(dialect, {}, { now: () => Date.now() + skew })

  it('lists each record with the contract’s fields in order, by id, and the CSV holds the same', async () => {
    const folder = tag('fields')
    const now = Math.floor(Date.now() / 1000) * 1000
    const seeded = await seedLog(s, [
      {
        path: `${folder}/report "q1", final.csv`,
        status: 500,
        success: false,
        message: 'HTTP 500 Internal Server Error',
        createdAt: now - 60_000,
        attempt: 2,
        operation: 'Upload',
        responseBody: 'error: "disk full",\r\nretry later ✓',
        requestBody: '{\n  "pretty": "json"\n}',
        responseSize: 4096,
        requestHeaders: { 'Content-Type': 'application/json', 'webhook-id': 'msg_1', 'X-Note': 'a,b' },
      },
      // Sent earlier than the record before it, logged later: results go by id.
      {
        path: `${folder}/sub/é ✓.txt`,
        status: 204,
        success: true,
        message: 'No Content',
        createdAt: now - 120_000,
        operation: 'Download',
        // A listener's answer with lone line breaks (an HTML page, pretty JSON …).
        responseBody: '<html>\n<body>ok</body>\r</html>\n',
      },
      {
        path: `${folder}/gone.txt`,
        status: 7,
        success: false,
        message: 'Connection refused',
        createdAt: now - 30_000,
        method: 'POST',
        url: 'http://127.0.0.1:9/hook?a=1,2',
        operation: 'Delete',
      },
    ])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const r = await getResults(s, e.id, admin())
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual(seeded.map(expectedResult))
    for (const row of r.body) {
      expect(Object.keys(row)).toEqual([...JSON_RESULT_FIELDS])
      expect(Number.isInteger(row.created_at)).toBe(true)
    }
    expect(r.body[0].created_at).toBe((now - 60_000) / 1000)
    expect(r.body[1].folder).toBe(`${folder}/sub`)

    const csv = await expectCsvMatches(e.results_url, r.body)
    // created_at: epoch seconds in JSON, ISO 8601 in the CSV.
    expect(csv[1]![1]).toBe(new Date(now - 60_000).toISOString().replace('.000Z', 'Z'))
    expect(csv[1]![4]).toBe('false')
    expect(csv[2]![4]).toBe('true')
    expect(csv[1]![13]).toBe('error: "disk full",\r\nretry later ✓')
    expect(csv[1]![14]).toBe('{\n  "pretty": "json"\n}')
    expect(csv[2]![13]).toBe('<html>\n<body>ok</body>\r</html>\n')
  })

  it('gives an empty export as ready, an empty array and a CSV of the header row only', async () => {
    const e = await readyExport(s, { query_path: `${tag('none')}/nothing.txt` }, admin())
    expect(e.results_url).toEqual(expect.any(String))
    const r = await getResults(s, e.id, admin())
    expect(r.status).toBe(200)
    expect(r.body).toEqual([])
    expect(r.headers.get('X-Service-Cursor-Next')).toBeNull()
    const rows = await expectCsvMatches(e.results_url, [])
    expect(rows).toEqual([[...RESULT_FIELDS]])
  })

  it('keeps the records that matched when it was built: later records stay out of it', async () => {
    const folder = tag('snapshot')
    const before = await seedLog(s, [{ path: `${folder}/a.txt`, createdAt: Date.now() - 5000 }])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const after = await seedLog(s, [{ path: `${folder}/b.txt`, createdAt: Date.now() - 4000 }])
    const r = await getResults(s, e.id, admin())
    expect(r.body.map((x: any) => x.id)).toEqual([before[0]!.id])
    const again = await getExport(s, e.id, admin())
    await expectCsvMatches(again.body.results_url, r.body)
    const fresh = await readyExport(s, { query_folder: folder }, admin())
    const all = await getResults(s, fresh.id, admin())
    expect(all.body.map((x: any) => x.id)).toEqual([before[0]!.id, after[0]!.id])
  })

  it('names a delivery made after the export was built: it is read with the results, not the snapshot', async () => {
    const folder = tag('delivered-later')
    const [failed, other] = await seedLog(s, [
      { path: `${folder}/a.txt`, status: 503, success: false, createdAt: Date.now() - 5000 },
      { path: `${folder}/b.txt`, status: 503, success: false, createdAt: Date.now() - 4000 },
    ])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const before = await getResults(s, e.id, admin())
    expect(before.status).toBe(200)
    expect(before.body.map((x: any) => x.delivered_by_id)).toEqual([null, null])
    // a.txt's notification is then delivered by a second attempt, as the dispatcher records it.
    const db = s.container.db
    const { notification_id } = await db
      .selectFrom('webhook_attempts')
      .select('notification_id')
      .where('id', '=', failed!.id)
      .executeTakeFirstOrThrow()
    const { id: _id, ...sent } = await db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('id', '=', failed!.id)
      .executeTakeFirstOrThrow()
    const delivering = await db
      .insertInto('webhook_attempts')
      .values({ ...sent, attempt: 2, status: 200, message: 'OK', success: 1, created_at: Date.now() })
      .returning('id')
      .executeTakeFirstOrThrow()
    await db
      .updateTable('webhook_notifications')
      .set({ state: 'delivered', attempts: 2 })
      .where('id', '=', notification_id)
      .execute()
    const after = await getResults(s, e.id, admin())
    expect(after.status).toBe(200)
    expect(after.body.map((x: any) => [x.id, x.delivered_by_id, x.delivered_by_attempt])).toEqual([
      [failed!.id, Number(delivering.id), 2],
      [other!.id, null, null],
    ])
    // The CSV is the snapshot: the same records, without the extensions.
    await expectCsvMatches(e.results_url, after.body)
  })

  it('serves results_url without credentials, and refuses it tampered', async () => {
    const folder = tag('signed')
    await seedLog(s, [{ path: `${folder}/a.txt` }])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const other = await readyExport(s, { query_path: `${folder}/none.txt` }, admin())
    expect((await fetchCsv(e.results_url)).status).toBe(200)
    const tampered = tamperedUrls(e.results_url)
    expect(tampered.length).toBeGreaterThan(0)
    for (const url of tampered) await expectLinkRefused(url)
    // Another export's id under this export's signature, where the link names the id.
    const swapped = e.results_url.replace(new RegExp(`([/=])${e.id}(?=[/.?&]|$)`), `$1${other.id}`)
    if (swapped !== e.results_url) await expectLinkRefused(swapped)
  })

  it('keeps results_url valid for 24 hours from the GET that returned it, on the server’s clock', async () => {
    const folder = tag('expiry')
    await seedLog(s, [{ path: `${folder}/a.txt` }])
    const e = await readyExport(s, { query_folder: folder }, admin())
    const json = (await getResults(s, e.id, admin())).body
    const url = (await getExport(s, e.id, admin())).body.results_url as string
    try {
      skew = DAY - 60_000
      await expectCsvMatches(url, json)
      skew = DAY + 60_000
      await expectLinkRefused(url)
      // A fresh read of the export gives a link that works from now.
      const fresh = (await getExport(s, e.id, admin())).body.results_url as string
      await expectCsvMatches(fresh, json)
      skew = 2 * DAY + 120_000
      await expectLinkRefused(fresh)
    } finally {
      skew = 0
    }
  })
})
