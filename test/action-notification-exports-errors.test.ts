import { beforeAll, describe, expect, it } from 'vitest'
import { call, dialects, expectError, useServer } from './helpers/server.js'
import { createExport, getExport, getResults, readyExport, seedLog } from './helpers/webhook-log-fixtures.js'

/** Every refusal of the three endpoints that is about the request rather than who makes it. */

describe.each(dialects)('webhook-log exports: refusals (%s)', (dialect) => {
  const admin = () => ({ key: s.adminKey })
  const post = (body: Record<string, unknown>) => createExport(s, body, admin())

  const s = useServer(dialect)
  beforeAll(async () => {
    await seedLog(s, [{ path: 'errors/a.txt' }])
  })

  it('refuses a date-time it cannot read with datetime-parse', async () => {
    for (const body of [
      { start_at: 'yesterday' },
      { end_at: '2026-13-45' },
      { start_at: '2026-01-10T25:00:00Z' },
      { end_at: '2026-01-10T10:00:00+25:00' },
    ]) {
      const r = await post(body)
      expect({ body, status: r.status, type: r.body?.type }).toEqual({
        body,
        status: 400,
        type: 'bad-request/datetime-parse',
      })
    }
  })

  it('refuses start_at later than end_at as a model error on end_at', async () => {
    const r = await post({ start_at: '2026-01-11T00:00:00Z', end_at: '2026-01-10T00:00:00Z' })
    expectError(r, 422, 'processing-failure/model-save-error')
    expect(Object.keys(r.body.model_errors)).toEqual(['end_at'])
    // Equal bounds are no error: an empty range.
    const empty = await readyExport(
      s,
      { start_at: '2026-01-10T00:00:00Z', end_at: '2026-01-10T00:00:00Z' },
      admin(),
    )
    expect((await getResults(s, empty.id, admin())).body).toEqual([])
  })

  it('refuses a query_status that is not an integer and a query_success that is not a boolean', async () => {
    for (const body of [
      { query_status: 'abc' },
      { query_status: '500,oops' },
      { query_status: '5.5' },
      { query_success: 'maybe' },
      { query_success: 'yes' },
      { query_success: 1 },
    ]) {
      const r = await post(body)
      expect({ body, status: r.status, type: r.body?.type }).toEqual({
        body,
        status: 400,
        type: 'bad-request/request-params-invalid',
      })
    }
  })

  it('refuses an invalid path in query_path or query_folder', async () => {
    for (const body of [
      { query_path: 'a/../b.txt' },
      { query_folder: '../etc' },
      { query_path: 'a/\u0001b' },
    ]) {
      const r = await post(body)
      expect({ body, status: r.status, type: r.body?.type }).toEqual({
        body,
        status: 400,
        type: 'bad-request/invalid-path',
      })
    }
  })

  it('refuses an unknown field, in the body and in the query string', async () => {
    expectError(
      await post({ query_folder: 'errors', query_colour: 'blue' }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await call(s, 'POST', '/action_notification_exports?query_flder=errors', admin()),
      400,
      'bad-request/request-params-invalid',
    )
    const e = await readyExport(s, { query_folder: 'errors' }, admin())
    expectError(
      await getResults(s, e.id, admin(), { sort_by: 'id' }),
      400,
      'bad-request/request-params-invalid',
    )
  })

  it('answers 404 for an unknown export, and 400 for an id that is not one', async () => {
    expectError(await getExport(s, 99_999_999, admin()), 404, 'not-found')
    expectError(await getResults(s, 99_999_999, admin()), 404, 'not-found')
    expectError(await getExport(s, 'abc', admin()), 400, 'bad-request/request-params-invalid')
    expectError(await getResults(s, 'abc', admin()), 400, 'bad-request/request-params-invalid')
    // A history export is no webhook-log export, though both are exports.
    const history = await call(s, 'POST', '/history_exports', { ...admin(), body: {} })
    expect(history.status, history.text).toBe(201)
    expectError(await getExport(s, history.body.id, admin()), 404, 'not-found')
    expectError(await getResults(s, history.body.id, admin()), 404, 'not-found')
  })

  it('requires action_notification_export_id for the results', async () => {
    expectError(
      await call(s, 'GET', '/action_notification_export_results', admin()),
      400,
      'bad-request/request-params-required',
    )
    expectError(
      await call(s, 'GET', '/action_notification_export_results?per_page=5', admin()),
      400,
      'bad-request/request-params-required',
    )
  })

  it('refuses a body that is not JSON or XML', async () => {
    expectError(
      await call(s, 'POST', '/action_notification_exports', {
        ...admin(),
        raw: 'query_folder=a',
        contentType: 'text/plain',
      }),
      400,
      'bad-request/unsupported-media-type',
    )
    expectError(
      await call(s, 'POST', '/action_notification_exports', {
        ...admin(),
        raw: '{"query_folder":',
        contentType: 'application/json',
      }),
      400,
      'bad-request/invalid-body',
    )
  })
})
