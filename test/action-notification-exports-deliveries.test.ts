import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { closedPort } from './helpers/loopback-servers.js'
import { call, dialects, expectError, useServer } from './helpers/server.js'
import {
  expectCsvMatches,
  expectedResult,
  exportIds,
  getResults,
  RESULT_FIELDS,
  readyExport,
  type SeededRecord,
  walkResults,
} from './helpers/webhook-log-fixtures.js'

/**
 * Exports over records the delivery log itself wrote: real webhook requests from Wharf to a
 * loopback listener that answers 200, 500, or is not there at all (curl code 7).
 */

const FOLDER = 'deliveries'

describe.each(dialects)('webhook-log exports of real deliveries (%s)', (dialect) => {
  let listener: TestListener
  let refusedUrl: string
  /** The log rows as stored, in id order. */
  let log: SeededRecord[]
  const admin = () => ({ key: s.adminKey })
  const received = (path: string) => listener.received.filter((r: Received) => r.json?.path === path)
  const rowsOf = (path: string) => log.filter((r) => r.path === path)
  const idOf = (name: string, attempt: number) =>
    log.find((r) => r.path === `${FOLDER}/${name}` && r.attempt === attempt)!.id

  async function configure(url: string | null, enabled = true) {
    const r = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url, triggers: enabled ? ['Upload'] : [], enabled },
    })
    expect(r.status, r.text).toBe(200)
  }

  /** Waits (bounded) until `path` has `count` log records. */
  async function logged(path: string, count: number): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const rows = await s.container.db
        .selectFrom('webhook_attempts')
        .select('id')
        .where('path', '=', path)
        .execute()
      if (rows.length >= count) return
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`${path}: fewer than ${count} log records`)
  }

  // One retry, 0.1 s after a failure: two attempts in all.
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.1' })
  beforeAll(async () => {
    let failedOnce = false
    listener = await startListener((r) => {
      if (r.json?.path === `${FOLDER}/fail.txt` && !failedOnce) {
        failedOnce = true
        return { status: 500, body: 'nope, try later' }
      }
      return { status: 200, body: 'thanks' }
    })
    await configure(listener.url)
    await uploaded(s, `${FOLDER}/ok.txt`, 'ok')
    await uploaded(s, `${FOLDER}/fail.txt`, 'fail')
    await logged(`${FOLDER}/ok.txt`, 1)
    await logged(`${FOLDER}/fail.txt`, 2)
    refusedUrl = `http://127.0.0.1:${await closedPort()}/hook`
    await configure(refusedUrl)
    await uploaded(s, `${FOLDER}/refused.txt`, 'refused')
    await logged(`${FOLDER}/refused.txt`, 2)
    await configure(null, false)
    const rows = await s.container.db
      .selectFrom('webhook_attempts')
      .select([...RESULT_FIELDS])
      .orderBy('id')
      .execute()
    log = rows.map((r) => ({
      ...r,
      id: Number(r.id),
      created_at: Number(r.created_at),
      response_size: Number(r.response_size),
    }))
  })
  afterAll(async () => {
    await listener?.close()
  })

  it('exports exactly what the delivery log wrote, and the CSV holds the same', async () => {
    // Deliveries of different notifications may be logged in either order.
    const seen = log.map((r) => [r.path, r.attempt, r.status] as [string, number, number])
    expect(seen.sort((a, b) => a[0].localeCompare(b[0]) || a[1] - b[1])).toEqual([
      [`${FOLDER}/fail.txt`, 1, 500],
      [`${FOLDER}/fail.txt`, 2, 200],
      [`${FOLDER}/ok.txt`, 1, 200],
      [`${FOLDER}/refused.txt`, 1, 7],
      [`${FOLDER}/refused.txt`, 2, 7],
    ])
    const e = await readyExport(s, { query_folder: FOLDER }, admin())
    const { rows } = await walkResults(s, e.id, admin())
    // fail.txt's first attempt was delivered by its second; nothing else was.
    const deliveredBy = (r: SeededRecord) =>
      r.id === idOf('fail.txt', 1)
        ? { delivered_by_id: idOf('fail.txt', 2), delivered_by_attempt: 2 }
        : { delivered_by_id: null, delivered_by_attempt: null }
    expect(rows).toEqual(log.map((r) => ({ ...expectedResult(r), ...deliveredBy(r) })))
    await expectCsvMatches(e.results_url, rows)
  })

  it('names the attempt that delivered a failure’s notification, even when only failures are exported', async () => {
    const e = await readyExport(s, { query_folder: FOLDER, query_success: false }, admin())
    const r = await getResults(s, e.id, admin())
    expect(r.status, r.text).toBe(200)
    const delivered = r.body.map((x: any) => [x.id, x.success, x.delivered_by_id, x.delivered_by_attempt])
    expect(delivered).toEqual(
      [
        [idOf('fail.txt', 1), false, idOf('fail.txt', 2), 2],
        [idOf('refused.txt', 1), false, null, null],
        [idOf('refused.txt', 2), false, null, null],
      ].sort((a, b) => Number(a[0]) - Number(b[0])),
    )
    // The retry endpoint refuses that record, naming the same delivering record.
    const again = await call(s, 'POST', `/action_webhook_failures/${idOf('fail.txt', 1)}/retry`, admin())
    expectError(again, 422, 'processing-failure/model-save-error')
    expect(again.body.model_errors.id[0]).toContain(`log record ${idOf('fail.txt', 2)} has since delivered`)
    // XML says the same, null as nil.
    const xml = await call(
      s,
      'GET',
      `/action_notification_export_results.xml?action_notification_export_id=${e.id}`,
      admin(),
    )
    expect(xml.status, xml.text).toBe(200)
    expect(xml.text).toContain(`<delivered_by_id type="integer">${idOf('fail.txt', 2)}</delivered_by_id>`)
    expect(xml.text.match(/<delivered_by_id nil="true"\/>/g)).toHaveLength(2)
    // The Swagger document describes both fields, as nullable integers.
    const doc = await call(s, 'GET', '/swagger_doc')
    expect(doc.status).toBe(200)
    const item = doc.body.paths['/action_notification_export_results'].get.responses['200'].schema.items
    const fields = (item.$ref ? doc.body.definitions[item.$ref.split('/').pop()] : item).properties
    for (const f of ['delivered_by_id', 'delivered_by_attempt']) {
      expect(fields[f], f).toMatchObject({ type: 'integer', 'x-nullable': true })
    }
  })

  it('carries the request as sent and the listener’s answer', async () => {
    const e = await readyExport(s, { query_path: `${FOLDER}/fail.txt`, query_status: '500' }, admin())
    const { rows } = await walkResults(s, e.id, admin())
    expect(rows).toHaveLength(1)
    const [failed] = rows
    const [sent] = received(`${FOLDER}/fail.txt`)
    expect(failed).toMatchObject({
      status: 500,
      success: false,
      message: 'HTTP 500 Internal Server Error',
      request_method: 'POST',
      request_url: listener.url,
      path: `${FOLDER}/fail.txt`,
      folder: FOLDER,
      attempt: 1,
      operation: 'Upload',
      response_body: 'nope, try later',
      response_size: Buffer.byteLength('nope, try later'),
      request_body: sent!.body,
    })
    const headers = JSON.parse(failed.request_headers)
    expect(headers['webhook-id']).toBe(sent!.headers['webhook-id'])
    expect(headers['X-Service-Signature']).toBe(sent!.headers['x-service-signature'])
    expect(Math.abs(failed.created_at - sent!.at / 1000)).toBeLessThan(60)
  })

  it('finds the failures by success, status (curl code included), message and URL', async () => {
    const [ok, fail1, fail2, refused1, refused2] = [
      idOf('ok.txt', 1),
      idOf('fail.txt', 1),
      idOf('fail.txt', 2),
      idOf('refused.txt', 1),
      idOf('refused.txt', 2),
    ]
    const sorted = (...ids: number[]) => ids.sort((a, b) => a - b)
    const q = (body: Record<string, unknown>) => exportIds(s, { query_folder: FOLDER, ...body })
    expect(await q({ query_success: false })).toEqual(sorted(fail1, refused1, refused2))
    expect(await q({ query_success: true })).toEqual(sorted(ok, fail2))
    expect(await q({ query_status: '7' })).toEqual([refused1, refused2])
    expect(await q({ query_status: '500,7' })).toEqual(sorted(fail1, refused1, refused2))
    expect(await q({ query_message: 'connection refused' })).toEqual([refused1, refused2])
    expect(await q({ query_request_url: refusedUrl })).toEqual([refused1, refused2])
    expect(await q({ query_request_url: listener.url, query_success: true })).toEqual(sorted(ok, fail2))
    expect(await q({ query_path: `${FOLDER}/refused.txt` })).toEqual(
      rowsOf(`${FOLDER}/refused.txt`).map((r) => r.id),
    )
    const refusedBy = `Connection refused by ${new URL(refusedUrl).host}`
    expect(rowsOf(`${FOLDER}/refused.txt`).every((r) => r.message === refusedBy)).toBe(true)
  })
})
