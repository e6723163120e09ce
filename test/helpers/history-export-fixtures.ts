import { parse } from 'csv-parse/sync'
import { expect } from 'vitest'
import { type NewAction, recordAction } from '../../src/modules/actions/action-recorder.js'
import { type CallResult, call, type TestServer } from './server.js'

/** History exports as a client uses them, and actions written straight into the history. */

export const HISTORY_RESULT_FIELDS = [
  'id',
  'created_at',
  'created_at_iso',
  'user_id',
  'file_id',
  'parent_id',
  'path',
  'folder',
  'src',
  'destination',
  'ip',
  'username',
  'user_is_from_parent_site',
  'action',
  'failure_type',
  'interface',
  'target_id',
  'target_name',
  'target_permission',
  'target_recursive',
  'target_expires_at',
  'target_expires_at_iso',
  'target_permission_set',
  'target_platform',
  'target_username',
  'target_user_id',
]

export type Auth = { key: string } | { session: string }

export const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`

export interface Actor {
  user?: { id: number; username: string } | null
  ip?: string
  interface?: string
}

/** Records an Action `msAgo` milliseconds before now (epoch ms of the server's clock `now`). */
export async function recordAt(
  s: TestServer,
  msAgo: number,
  a: NewAction,
  who: Actor = {},
): Promise<{ id: number; at: number }> {
  const at = s.container.now() - msAgo
  const id = await recordAction(
    s.container.db,
    {
      siteId: s.container.site.id,
      userId: who.user?.id ?? null,
      username: who.user?.username ?? null,
      ip: who.ip ?? '198.51.100.7',
      interface: who.interface ?? 'restapi',
    },
    a,
    at,
  )
  return { id, at }
}

export const upload = (path: string, fileId = 7): NewAction => ({
  action: 'create',
  display: `Uploaded ${path.slice(path.lastIndexOf('/') + 1)}`,
  path,
  targets: [{ type: 'file', id: fileId, name: path.slice(path.lastIndexOf('/') + 1) }],
})

export const createHistoryExport = (s: TestServer, body: Record<string, unknown>, auth: Auth) =>
  call(s, 'POST', '/history_exports', { ...auth, body })

/** Polls GET /history_exports/{id} until it leaves `building` (bounded) and returns it. */
export async function pollHistoryExport(s: TestServer, id: number, auth: Auth): Promise<any> {
  for (let i = 0; i < 800; i++) {
    const r = await call(s, 'GET', `/history_exports/${id}`, auth)
    expect(r.status, r.text).toBe(200)
    if (r.body.status !== 'building') return r.body
    await new Promise((done) => setTimeout(done, 25))
  }
  throw new Error(`history export ${id} never left building`)
}

/** Creates a history export and waits until it is ready. */
export async function readyHistoryExport(s: TestServer, body: Record<string, unknown>, auth: Auth) {
  const r = await createHistoryExport(s, body, auth)
  expect(r.status, r.text).toBe(201)
  expect(r.body.status).toBe('building')
  const done = await pollHistoryExport(s, r.body.id, auth)
  expect(done.status, JSON.stringify(done)).toBe('ready')
  return done
}

export const historyResults = (
  s: TestServer,
  id: number,
  auth: Auth,
  params: Record<string, string | number> = {},
): Promise<CallResult> => {
  const q = new URLSearchParams({ history_export_id: String(id) })
  for (const [k, v] of Object.entries(params)) q.set(k, String(v))
  return call(s, 'GET', `/history_export_results?${q}`, auth)
}

/** Every result of a ready export, following X-Service-Cursor-Next. */
export async function allHistoryResults(s: TestServer, id: number, auth: Auth, perPage = 10_000) {
  const rows: any[] = []
  let cursor: string | null = null
  for (let i = 0; i < 10_000; i++) {
    const r = await historyResults(s, id, auth, { per_page: perPage, ...(cursor ? { cursor } : {}) })
    expect(r.status, r.text).toBe(200)
    expect(r.headers.get('X-Service-Cursor-Prev')).toBeNull()
    rows.push(...r.body)
    cursor = r.headers.get('X-Service-Cursor-Next')
    if (!cursor) return rows
  }
  throw new Error('results never ended')
}

/** Ids of the results of a ready history export made with `body`. */
export async function historyExportIds(s: TestServer, body: Record<string, unknown>, auth?: Auth) {
  const who = auth ?? { key: s.adminKey }
  const e = await readyHistoryExport(s, body, who)
  return (await allHistoryResults(s, e.id, who)).map((r) => r.id as number)
}

/** The CSV behind a results_url, parsed (header row first). */
export async function fetchCsvRows(url: string): Promise<{ res: Response; rows: string[][] }> {
  const res = await fetch(url)
  const text = await res.text()
  expect(res.status, text.slice(0, 300)).toBe(200)
  return { res, rows: parse(text) as string[][] }
}

/** A JSON result as the CSV writes it: dates ISO 8601 UTC, null as an empty field. */
export function csvRowOfHistory(r: Record<string, unknown>): string[] {
  return HISTORY_RESULT_FIELDS.map((f) => {
    const v = r[f]
    if (f === 'created_at') return new Date(Number(v) * 1000).toISOString().replace('.000Z', 'Z')
    if (v === null || v === undefined) return ''
    return String(v)
  })
}
