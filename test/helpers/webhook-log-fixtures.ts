import crypto from 'node:crypto'
import http from 'node:http'
import type { Insertable } from 'kysely'
import { expect } from 'vitest'
import type { WebhookNotificationsTable } from '../../src/db/schema.js'
import type { ExportJob } from '../../src/exports/export-kind.js'
import { type CallResult, call, type TestServer } from './server.js'

/**
 * Webhook-log exports in tests: log records written straight into `webhook_attempts` with
 * controlled values, the export workflow over raw HTTP (create, poll to ready, page through the
 * results, fetch the CSV), and a small RFC 4180 reader for the CSV.
 */

/** The ActionNotificationExportResult fields, in the order the contract fixes (JSON and CSV). */
export const RESULT_FIELDS = [
  'id',
  'created_at',
  'status',
  'message',
  'success',
  'request_headers',
  'request_method',
  'request_url',
  'path',
  'folder',
  'attempt',
  'operation',
  'response_size',
  'response_body',
  'request_body',
  'behavior_id',
] as const

/**
 * The fields of a JSON result: the CSV's, then the Wharf extensions read from the log as it is
 * when the results are asked for (not in the CSV).
 */
export const JSON_RESULT_FIELDS = [...RESULT_FIELDS, 'delivered_by_id', 'delivered_by_attempt'] as const

/** The ActionNotificationExport fields (any order). */
export const EXPORT_FIELDS = [
  'id',
  'export_version',
  'start_at',
  'end_at',
  'status',
  'query_message',
  'query_request_method',
  'query_request_url',
  'query_status',
  'query_path',
  'query_folder',
  'query_success',
  'query_behavior_id',
  'results_url',
  'user_id',
  'failure_reason',
  'results_count',
]

/** One log record to seed; everything but `path` has a default. */
export interface LogRecord {
  path: string
  /** Default: the parent folder of `path` (`""` at the top). */
  folder?: string
  status?: number
  success?: boolean
  message?: string
  method?: string
  url?: string
  /** When the request was sent: epoch milliseconds or ISO text. Default: now. */
  createdAt?: number | string
  attempt?: number
  operation?: string
  userId?: number | null
  requestHeaders?: Record<string, string>
  requestBody?: string
  responseBody?: string
  responseSize?: number
}

/** A seeded record as stored (the row's columns, `success` as 0/1, times in milliseconds). */
export interface SeededRecord {
  id: number
  created_at: number
  status: number
  message: string
  success: number
  request_headers: string
  request_method: string
  request_url: string
  path: string
  folder: string
  attempt: number
  operation: string
  response_size: number
  response_body: string
  request_body: string
}

export const parentOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '')

const ms = (t: number | string | undefined) =>
  t === undefined ? Date.now() : typeof t === 'number' ? t : Date.parse(t)

/**
 * Writes one notification per record (state `failed` or `delivered`, never `pending`, so the
 * dispatcher leaves it alone) and the record itself, one after the other: ids follow the order
 * of `records`.
 */
export async function seedLog(s: TestServer, records: LogRecord[]): Promise<SeededRecord[]> {
  const out: SeededRecord[] = []
  const siteId = s.container.site.id
  for (const r of records) {
    const createdAt = ms(r.createdAt)
    const success = r.success ?? r.status === undefined
    const status = r.status ?? 200
    const operation = r.operation ?? 'Upload'
    const messageId = `msg_${crypto.randomBytes(12).toString('hex')}`
    const body =
      r.requestBody ??
      JSON.stringify({
        accountname: 'wharf',
        username: '',
        operation,
        protocol: 'restapi',
        path: r.path,
        sourcepath: '',
        attempt: r.attempt ?? 1,
      })
    const n = await s.container.db
      .insertInto('webhook_notifications')
      .values({
        site_id: siteId,
        action_id: null,
        message_id: messageId,
        operation,
        user_id: r.userId ?? null,
        username: '',
        protocol: 'restapi',
        path: r.path,
        sourcepath: '',
        folder: r.folder ?? parentOf(r.path),
        state: success ? 'delivered' : 'failed',
        attempts: r.attempt ?? 1,
        max_attempts: r.attempt ?? 1,
        next_attempt_at: null,
        lease_owner: null,
        lease_until: null,
        created_at: createdAt,
        updated_at: createdAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const row = {
      site_id: siteId,
      notification_id: Number(n.id),
      attempt: r.attempt ?? 1,
      created_at: createdAt,
      user_id: r.userId ?? null,
      operation,
      status,
      message: r.message ?? (success ? 'OK' : `HTTP ${status}`),
      success: success ? 1 : 0,
      request_headers: JSON.stringify(
        r.requestHeaders ?? {
          'Content-Type': 'application/json',
          'User-Agent': 'Wharf-Webhook',
          'X-Service-Signature': crypto.randomBytes(16).toString('hex'),
          'webhook-id': messageId,
        },
      ),
      request_method: r.method ?? 'POST',
      request_url: r.url ?? 'https://hooks.example.com/in',
      request_body: body,
      path: r.path,
      folder: r.folder ?? parentOf(r.path),
      response_size: r.responseSize ?? Buffer.byteLength(r.responseBody ?? ''),
      response_body: r.responseBody ?? '',
      duration_ms: 12,
    }
    const a = await s.container.db
      .insertInto('webhook_attempts')
      .values(row)
      .returning('id')
      .executeTakeFirstOrThrow()
    const { site_id: _site, notification_id: _n, user_id: _u, duration_ms: _d, ...kept } = row
    out.push({ id: Number(a.id), ...kept })
  }
  return out
}

/** A webhook-log export job of the server's site, for a builder or source called directly. */
export function logJob(
  s: TestServer,
  query: Record<string, unknown>,
  range: Partial<ExportJob> = {},
): ExportJob {
  return {
    id: 1,
    site_id: s.container.site.id,
    kind: 'webhook_log',
    query,
    start_at: null,
    end_at: null,
    ...range,
  }
}

/**
 * A notification of the server's site written straight into the outbox, failed and done with
 * (an export's records hang off one): `path` and `folder` given, anything else as `fields` says.
 * Its id.
 */
export async function insertNotification(
  s: TestServer,
  fields: Pick<Insertable<WebhookNotificationsTable>, 'path' | 'folder'> &
    Partial<Insertable<WebhookNotificationsTable>>,
): Promise<number> {
  const row = await s.container.db
    .insertInto('webhook_notifications')
    .values({
      site_id: s.container.site.id,
      action_id: null,
      message_id: `msg_${crypto.randomBytes(12).toString('hex')}`,
      operation: 'Upload',
      user_id: null,
      username: '',
      protocol: 'restapi',
      sourcepath: '',
      state: 'failed',
      max_attempts: 8,
      next_attempt_at: null,
      lease_owner: null,
      lease_until: null,
      created_at: 0,
      updated_at: 0,
      ...fields,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return Number(row.id)
}

/**
 * Many records of one notification (attempts 1…count) in one statement, one second apart from
 * `startMs`, all under `folder`: for paging past the default page size. Ids ascend with attempt.
 */
export async function seedMany(
  s: TestServer,
  folder: string,
  count: number,
  startMs: number,
): Promise<number[]> {
  const siteId = s.container.site.id
  const id = await insertNotification(s, {
    path: `${folder}/bulk.txt`,
    folder,
    attempts: count,
    max_attempts: count,
    created_at: startMs,
    updated_at: startMs,
  })
  const ids: number[] = []
  // Chunks keep each statement well under both databases' limits on bound parameters.
  for (let from = 1; from <= count; from += 500) {
    const rows = []
    for (let i = from; i < Math.min(from + 500, count + 1); i++) {
      rows.push({
        site_id: siteId,
        notification_id: id,
        attempt: i,
        created_at: startMs + i * 1000,
        user_id: null,
        operation: 'Upload',
        status: 503,
        message: 'HTTP 503 Service Unavailable',
        success: 0,
        request_headers: '{}',
        request_method: 'POST',
        request_url: 'https://hooks.example.com/bulk',
        request_body: '{}',
        path: `${folder}/bulk.txt`,
        folder,
        response_size: 0,
        response_body: '',
        duration_ms: 1,
      })
    }
    const got = await s.container.db.insertInto('webhook_attempts').values(rows).returning('id').execute()
    ids.push(...got.map((g) => Number(g.id)))
  }
  return ids.sort((a, b) => a - b)
}

/**
 * The JSON result the contract gives for a stored record, fields in the contract's order; no
 * later attempt delivered it (each record seedLog writes has a notification of its own).
 */
export function expectedResult(r: SeededRecord): Record<string, unknown> {
  return {
    id: r.id,
    created_at: Math.floor(r.created_at / 1000),
    status: r.status,
    message: r.message,
    success: r.success === 1,
    request_headers: r.request_headers,
    request_method: r.request_method,
    request_url: r.request_url,
    path: r.path,
    folder: r.folder,
    attempt: r.attempt,
    operation: r.operation,
    response_size: r.response_size,
    response_body: r.response_body,
    request_body: r.request_body,
    behavior_id: null,
    delivered_by_id: null,
    delivered_by_attempt: null,
  }
}

/** ISO 8601 UTC at seconds precision, as the API writes date-times. */
export const iso = (epochMs: number) =>
  new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z')

/** Whose request it is: an API key or a session id. */
export type Auth = { key: string } | { session: string }

export const createExport = (s: TestServer, body: Record<string, unknown>, auth: Auth) =>
  call(s, 'POST', '/action_notification_exports', { ...auth, body })

export const getExport = (s: TestServer, id: number | string, auth: Auth) =>
  call(s, 'GET', `/action_notification_exports/${id}`, auth)

export function getResults(
  s: TestServer,
  exportId: number | string,
  auth: Auth,
  params: Record<string, string | number> = {},
): Promise<CallResult> {
  const q = new URLSearchParams({ action_notification_export_id: String(exportId) })
  for (const [k, v] of Object.entries(params)) q.set(k, String(v))
  return call(s, 'GET', `/action_notification_export_results?${q}`, auth)
}

/**
 * Polls GET /action_notification_exports/{id} until the export leaves `building` (bounded: at
 * most `tries` reads, 25 ms apart). Returns the last export read, whatever its status.
 */
export async function pollExport(s: TestServer, id: number, auth: Auth, tries = 800): Promise<any> {
  let last: CallResult | undefined
  for (let i = 0; i < tries; i++) {
    last = await getExport(s, id, auth)
    expect(last.status, last.text).toBe(200)
    if (last.body.status !== 'building') return last.body
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`export ${id} still building after ${tries} reads: ${last?.text}`)
}

/** Creates an export (201, building) and waits until it is ready; returns the ready export. */
export async function readyExport(s: TestServer, body: Record<string, unknown>, auth: Auth): Promise<any> {
  const r = await createExport(s, body, auth)
  expect(r.status, r.text).toBe(201)
  expect(r.body.status).toBe('building')
  const done = await pollExport(s, r.body.id, auth)
  expect(done.status, JSON.stringify(done)).toBe('ready')
  return done
}

/** Every page of an export's results through X-Service-Cursor-Next; each response is kept. */
export async function walkResults(
  s: TestServer,
  exportId: number,
  auth: Auth,
  perPage?: number,
): Promise<{ rows: any[]; responses: CallResult[] }> {
  const rows: any[] = []
  const responses: CallResult[] = []
  let cursor: string | null = null
  for (let page = 0; page < 20_000; page++) {
    const params: Record<string, string | number> = {}
    if (perPage !== undefined) params['per_page'] = perPage
    if (cursor) params['cursor'] = cursor
    const r = await getResults(s, exportId, auth, params)
    expect(r.status, r.text).toBe(200)
    expect(Array.isArray(r.body)).toBe(true)
    responses.push(r)
    rows.push(...r.body)
    cursor = r.headers.get('X-Service-Cursor-Next')
    if (!cursor) return { rows, responses }
  }
  throw new Error('results never ended')
}

/** Ids of every result of a ready export made with `body` (site-wide key unless told). */
export async function exportIds(
  s: TestServer,
  body: Record<string, unknown>,
  auth?: Auth,
): Promise<number[]> {
  const who = auth ?? { key: s.adminKey }
  const e = await readyExport(s, body, who)
  const { rows } = await walkResults(s, e.id, who, 10_000)
  return rows.map((r) => r.id)
}

/**
 * Fetches a `results_url` with no credentials at all, on a connection of its own that closes after
 * the response (`Connection: close`): a kept-alive connection that served a streamed body can
 * hold up the server's shutdown until its keep-alive timeout.
 */
export function fetchCsv(url: string): Promise<{ status: number; headers: Headers; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const headers = new Headers()
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v)
        }
        resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    req.on('error', reject)
  })
}

/**
 * RFC 4180, strictly: fields separated by commas, records by line breaks (CRLF, or LF when the
 * text's first line break is a lone LF); a field holding a comma, a quote, a CR or an LF must be
 * in double quotes, with `""` for a quote. A final line break ends the last record, it does not
 * start an empty one. Throws on a quote inside an unquoted field, text after a closing quote, a
 * line break character inside an unquoted field (other readers would split the record there),
 * or an unterminated quoted field.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let i = 0
  let quoted = false
  let fieldStarted = false
  const firstBreak = text.indexOf('\n')
  const crlf = firstBreak > 0 && text[firstBreak - 1] === '\r'
  const endField = () => {
    record.push(field)
    field = ''
    fieldStarted = false
  }
  const endRecord = () => {
    endField()
    records.push(record)
    record = []
  }
  while (i < text.length) {
    const c = text[i]!
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"'
          i += 2
          continue
        }
        quoted = false
        i++
        const next = text[i]
        if (next !== undefined && next !== ',' && next !== (crlf ? '\r' : '\n'))
          throw new Error(`CSV: text after a closing quote at ${i}`)
        continue
      }
      field += c
      i++
      continue
    }
    if (c === '"') {
      if (fieldStarted) throw new Error(`CSV: quote inside an unquoted field at ${i}`)
      quoted = true
      fieldStarted = true
      i++
      continue
    }
    if (c === ',') {
      endField()
      i++
      continue
    }
    if (c === '\r' && text[i + 1] === '\n') {
      endRecord()
      i += 2
      continue
    }
    if (c === '\n' && !crlf) {
      endRecord()
      i++
      continue
    }
    if (c === '\n' || c === '\r') throw new Error(`CSV: unquoted line break inside a field at ${i}`)
    field += c
    fieldStarted = true
    i++
  }
  if (quoted) throw new Error('CSV: unterminated quoted field')
  if (fieldStarted || field !== '' || record.length > 0) endRecord()
  return records
}

/** A JSON result as the contract writes it in the CSV: text, `created_at` as ISO 8601 UTC. */
export function csvRowOf(result: Record<string, unknown>): string[] {
  return RESULT_FIELDS.map((f) => {
    const v = result[f]
    if (f === 'created_at') return iso(Number(v) * 1000)
    if (v === null || v === undefined) return ''
    return String(v)
  })
}

/**
 * The CSV behind `results_url` holds exactly the JSON results: header row, the same records in
 * the same order, each field as csvRowOf writes it. Returns the parsed rows.
 */
export async function expectCsvMatches(url: string, results: Record<string, unknown>[]): Promise<string[][]> {
  expect(url.startsWith('http')).toBe(true)
  const csv = await fetchCsv(url)
  expect(csv.status, csv.text.slice(0, 500)).toBe(200)
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="[^"]+\.csv"$/)
  const rows = parseCsv(csv.text)
  expect(rows[0]).toEqual([...RESULT_FIELDS])
  expect(rows.slice(1)).toEqual(results.map(csvRowOf))
  return rows
}

/** Each of these URLs is `url` with one query value or path segment changed. */
export function tamperedUrls(url: string): string[] {
  const u = new URL(url)
  const flip = (v: string) => `${v.slice(0, -1)}${v.endsWith('0') ? '1' : '0'}`
  const out: string[] = []
  for (const [k, v] of u.searchParams) {
    if (v === '') continue
    const t = new URL(url)
    t.searchParams.set(k, flip(v))
    out.push(t.href)
  }
  // Without any query at all.
  if (u.search !== '') {
    const bare = new URL(url)
    bare.search = ''
    out.push(bare.href)
  }
  // Without a query, the signature lives in the path: its last segment changed (any `.csv` kept).
  if (u.search === '') {
    const segs = u.pathname.split('/')
    const last = segs.at(-1) ?? ''
    const ext = last.endsWith('.csv') ? '.csv' : ''
    segs[segs.length - 1] = flip(last.slice(0, last.length - ext.length)) + ext
    const t = new URL(url)
    t.pathname = segs.join('/')
    out.push(t.href)
  }
  return out
}

/** A refusal of a signed link: 401 `not-authenticated/invalid-or-expired-code`, JSON error body. */
export async function expectLinkRefused(url: string): Promise<void> {
  const res = await fetchCsv(url)
  expect({ status: res.status, url }).toEqual({ status: 401, url })
  expect(JSON.parse(res.text).type).toBe('not-authenticated/invalid-or-expired-code')
}

/**
 * An export row written straight into the `exports` table (migration 006), for states a test
 * cannot otherwise hold still: `building` under another worker's unexpired claim (so no worker
 * here takes it), or `building` under a claim that ran out (a crashed worker's). Returns its id.
 */
export async function insertExportRow(
  s: TestServer,
  o: {
    status: 'building' | 'failed'
    leaseOwner?: string
    /** Default: a year from now (the claim holds); a past time is a claim left by a crash. */
    leaseUntil?: number
    failureReason?: string
    userId?: number | null
    query?: Record<string, unknown>
  },
): Promise<number> {
  const now = Date.now()
  const row = await s.container.db
    .insertInto('exports')
    .values({
      site_id: s.container.site.id,
      kind: 'webhook_log',
      user_id: o.userId ?? null,
      status: o.status,
      failure_reason: o.status === 'failed' ? (o.failureReason ?? 'failed') : null,
      start_at: null,
      end_at: null,
      query: JSON.stringify(o.query ?? {}),
      blob_key: null,
      result_bytes: null,
      result_count: null,
      attempts: 1,
      lease_owner: o.leaseOwner ?? null,
      lease_until: o.leaseOwner ? (o.leaseUntil ?? now + 365 * 86_400_000) : null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return Number(row.id)
}
