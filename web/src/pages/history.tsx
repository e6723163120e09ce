import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, all, describe, encodePath, get, type Me, page, post, type Query } from '../api'
import { isoToLocalDateTime, localDateTimeToIso } from '../components/admin-time'
import { href, navigate, type Route } from '../router'
import { formatDate, Loading, PageTitle, useAsync } from '../ui'
import './admin.css'

/** The Action resource (one history record) as the API shows it. */
export interface Action {
  id: number
  path: string
  when: string
  destination: string | null
  display: string
  ip: string | null
  source: string | null
  user_id: number | null
  username: string | null
  action: string
  failure_type: string | null
  interface: string | null
}

interface HistoryExport {
  id: number
  status: 'building' | 'ready' | 'failed'
  results_url: string | null
  results_count?: number | null
  failure_reason: string | null
}

interface User {
  id: number
  username: string
}

type Scope = 'site' | 'folder' | 'file'

/** What the page shows, as the address keeps it (`#/history?scope=site&user_id=3…`). */
interface HistoryQuery {
  scope: Scope
  user: string
  folder: string
  path: string
  start: string
  end: string
  perPage: string
}

const PER_PAGE = ['25', '50', '100', '250']

function readQuery(params: URLSearchParams, me: Me): HistoryQuery {
  const s = params.get('scope')
  const scope: Scope = s === 'site' || s === 'folder' || s === 'file' ? s : me.site_admin ? 'site' : 'folder'
  const perPage = params.get('per_page') ?? '50'
  return {
    scope,
    user: params.get('user_id') ?? '',
    folder: params.get('folder') ?? '',
    path: params.get('path') ?? '',
    start: params.get('start_at') ?? '',
    end: params.get('end_at') ?? '',
    perPage: PER_PAGE.includes(perPage) ? perPage : '50',
  }
}

function toParams(q: HistoryQuery): Record<string, string> {
  const p: Record<string, string> = { scope: q.scope }
  if (q.scope === 'site') {
    if (q.user) p['user_id'] = q.user
    if (q.folder) p['folder'] = q.folder
  }
  if (q.path) p['path'] = q.path
  if (q.start) p['start_at'] = q.start
  if (q.end) p['end_at'] = q.end
  if (q.perPage !== '50') p['per_page'] = q.perPage
  return p
}

const trimSlashes = (s: string) => s.trim().replace(/^\/+|\/+$/g, '')

/** The API call behind a view: `/history` with filters, or the history of one folder or file. */
function listCall(q: HistoryQuery): { path: string; query: Query } {
  const query: Query = { per_page: q.perPage, start_at: q.start, end_at: q.end }
  if (q.scope === 'site') {
    if (q.user) query['filter[user_id]'] = q.user
    if (q.folder) query['filter[folder]'] = trimSlashes(q.folder)
    const path = trimSlashes(q.path)
    if (path) query[path.includes('%') ? 'filter_like[path]' : 'filter[path]'] = path
    return { path: '/history', query }
  }
  const path = encodePath(q.path)
  return { path: q.scope === 'file' ? `/history/files/${path}` : `/history/folders/${path}`, query }
}

/** A view that needs nothing more from the user before it can be asked for. */
function ready(q: HistoryQuery, me: Me): boolean {
  if (q.scope === 'file') return trimSlashes(q.path) !== ''
  // The root folder's history is the whole site's: only worth asking for unprompted by an admin.
  if (q.scope === 'folder') return trimSlashes(q.path) !== '' || me.site_admin
  return true
}

/** The API's refusals of a history view, in words a person can act on. */
export function historyMessage(err: unknown, q: HistoryQuery): string {
  if (err instanceof ApiError) {
    if (err.type === 'not-authorized/site-admin-required')
      return 'Only site administrators can see the whole site’s history. Choose a folder or a file you can read instead.'
    if (err.type === 'not-authorized/read-permission-required')
      return `You may not see the history of “${trimSlashes(q.path) || 'the root folder'}”: you need read or history permission on it.`
    if (err.type === 'not-found' || err.type.startsWith('not-found/'))
      return `Nothing was found at “${trimSlashes(q.path)}”.`
  }
  return describe(err)
}

export function HistoryPage({ route, me }: { route: Route; me: Me }) {
  const q = readQuery(route.params, me)
  const viewKey = JSON.stringify(q)
  return (
    <section class="admin-page">
      <PageTitle>History</PageTitle>
      <p class="muted">
        What was done in the last 24 hours: uploads, downloads, moves, sign-ins, changes to users and keys.
        For anything older, export the full history below.
      </p>
      <HistoryFilters key={`f-${viewKey}`} q={q} me={me} />
      <HistoryTable key={`t-${viewKey}`} q={q} me={me} />
      <HistoryExportPanel key={`e-${viewKey}`} q={q} me={me} />
    </section>
  )
}

function HistoryFilters({ q, me }: { q: HistoryQuery; me: Me }) {
  const [form, setForm] = useState<HistoryQuery>(q)
  const [error, setError] = useState<string | null>(null)
  const users = useAsync<User[]>(() => (me.site_admin ? all<User>('/users') : Promise.resolve([])), [me.id])
  const set = (patch: Partial<HistoryQuery>) => setForm((f) => ({ ...f, ...patch }))

  function submit(e: Event) {
    e.preventDefault()
    setError(null)
    if (form.scope === 'file' && !trimSlashes(form.path)) {
      setError('Enter the path of the file.')
      return
    }
    navigate(href('history', '', toParams(form)))
  }

  const pathLabel =
    form.scope === 'site'
      ? 'Path (exact; % is a wildcard)'
      : form.scope === 'file'
        ? 'File path'
        : 'Folder path (empty: the root folder)'

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="history-filters">
      <h2 id="history-filters" class="visually-hidden">
        Filters
      </h2>
      <div class="form-row">
        <label>
          Show
          <select
            name="scope"
            value={form.scope}
            onChange={(e) => set({ scope: e.currentTarget.value as Scope })}
          >
            <option value="site" disabled={!me.site_admin}>
              {me.site_admin ? 'The whole site' : 'The whole site (site administrators only)'}
            </option>
            <option value="folder">A folder and everything in it</option>
            <option value="file">A file</option>
          </select>
        </label>
        {form.scope === 'site' ? (
          <>
            <label>
              User
              <select name="user_id" value={form.user} onChange={(e) => set({ user: e.currentTarget.value })}>
                <option value="">Anyone</option>
                {(users.data ?? []).map((u) => (
                  <option key={u.id} value={String(u.id)}>
                    {u.username}
                  </option>
                ))}
                {form.user && !users.data?.some((u) => String(u.id) === form.user) ? (
                  <option value={form.user}>user #{form.user}</option>
                ) : null}
              </select>
            </label>
            <label>
              Folder (its direct contents)
              <input
                name="folder"
                value={form.folder}
                onInput={(e) => set({ folder: e.currentTarget.value })}
              />
            </label>
          </>
        ) : null}
        <label class="grow">
          {pathLabel}
          <input
            name="path"
            value={form.path}
            placeholder={form.scope === 'site' ? 'e.g. reports/%.csv' : 'e.g. reports/2026'}
            onInput={(e) => set({ path: e.currentTarget.value })}
          />
        </label>
      </div>
      <div class="form-row">
        <label>
          From
          <input
            name="start_at"
            type="datetime-local"
            value={isoToLocalDateTime(form.start)}
            onInput={(e) => set({ start: localDateTimeToIso(e.currentTarget.value) ?? '' })}
          />
        </label>
        <label>
          Until
          <input
            name="end_at"
            type="datetime-local"
            value={isoToLocalDateTime(form.end)}
            onInput={(e) => set({ end: localDateTimeToIso(e.currentTarget.value) ?? '' })}
          />
        </label>
        <label>
          Rows per page
          <select
            name="per_page"
            value={form.perPage}
            onChange={(e) => set({ perPage: e.currentTarget.value })}
          >
            {PER_PAGE.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <div class="actions">
          <button type="submit">Show history</button>
          <a class="button secondary" href={href('history')}>
            Clear
          </a>
        </div>
      </div>
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  )
}

function HistoryTable({ q, me }: { q: HistoryQuery; me: Me }) {
  const asked = ready(q, me)
  const first = useAsync(
    () => (asked ? page<Action>(listCall(q).path, listCall(q).query) : Promise.resolve(null)),
    [],
  )
  const [more, setMore] = useState<Action[]>([])
  const [next, setNext] = useState<string | null | undefined>(undefined)
  const [moreError, setMoreError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  if (!asked) {
    return (
      <p class="muted" role="status">
        Enter a {q.scope === 'file' ? 'file' : 'folder'} you can read to see what was done in it.
      </p>
    )
  }
  if (first.loading) return <Loading />
  if (first.error) {
    return (
      <p class="error" role="alert">
        {historyMessage(first.error, q)}
      </p>
    )
  }
  const rows = [...(first.data?.items ?? []), ...more]
  const cursor = next === undefined ? (first.data?.next ?? null) : next

  async function loadMore() {
    if (!cursor) return
    setBusy(true)
    setMoreError(null)
    try {
      const call = listCall(q)
      const p = await page<Action>(call.path, { ...call.query, cursor })
      setMore((m) => [...m, ...p.items])
      setNext(p.next)
    } catch (err) {
      setMoreError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <>
      <h2 id="history-heading">
        {q.scope === 'site'
          ? 'Actions of the last 24 hours'
          : `Last 24 hours in “${trimSlashes(q.path) || 'the root folder'}”`}
      </h2>
      {rows.length === 0 ? (
        <p class="muted" role="status">
          No actions match.
        </p>
      ) : (
        <div class="table-wrap">
          <table class="history-table" aria-labelledby="history-heading">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">User</th>
                <th scope="col">Action</th>
                <th scope="col">Path</th>
                <th scope="col">Interface</th>
                <th scope="col">IP</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((a) => (
                <tr key={a.id} data-action-id={a.id}>
                  <td class="when">
                    <time dateTime={a.when}>{formatDate(a.when)}</time>
                  </td>
                  <td>
                    {a.username ?? <span class="muted">{a.user_id ? `user #${a.user_id}` : 'none'}</span>}
                  </td>
                  <td>
                    {a.action}
                    {a.failure_type ? (
                      <span class="muted"> ({a.failure_type.replace(/_/g, ' ')})</span>
                    ) : null}
                  </td>
                  <td class="path">
                    {a.source && a.source !== a.path ? (
                      <>
                        <span class="mono">{a.source}</span> →{' '}
                        <span class="mono">{a.destination ?? a.path}</span>
                      </>
                    ) : a.path ? (
                      <span class="mono">{a.path}</span>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td>{a.interface ?? ''}</td>
                  <td class="mono">{a.ip ?? ''}</td>
                  <td>{a.display}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {moreError ? (
        <p class="error" role="alert">
          {historyMessage(moreError, q)}
        </p>
      ) : null}
      {cursor ? (
        <button type="button" class="secondary load-more" disabled={busy} onClick={loadMore}>
          {busy ? 'Loading…' : 'Load more'}
        </button>
      ) : rows.length > 0 ? (
        <p class="muted">
          {rows.length} {rows.length === 1 ? 'action' : 'actions'}, all shown.
        </p>
      ) : null}
    </>
  )
}

/** The export's query: the same filters, over every stored action instead of the last 24 hours. */
function exportBody(q: HistoryQuery): { body: Record<string, string> } | { refusal: string } {
  const body: Record<string, string> = {}
  if (q.start) body['start_at'] = q.start
  if (q.end) body['end_at'] = q.end
  const path = trimSlashes(q.path)
  if (q.scope === 'site') {
    if (q.user) body['query_user_id'] = q.user
    if (q.folder) body['query_folder'] = trimSlashes(q.folder)
    if (path.includes('%'))
      return { refusal: 'A path with a % wildcard cannot be exported: export its folder instead.' }
    if (path) body['query_path'] = path
  } else if (q.scope === 'folder') {
    if (path) body['query_folder'] = path
  } else if (path) body['query_path'] = path
  return { body }
}

function HistoryExportPanel({ q, me }: { q: HistoryQuery; me: Me }) {
  const [exp, setExp] = useState<HistoryExport | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const alive = useRef(true)
  useEffect(
    () => () => {
      alive.current = false
    },
    [],
  )

  async function start() {
    setError(null)
    setExp(null)
    const made = exportBody(q)
    if ('refusal' in made) {
      setError(new Error(made.refusal))
      return
    }
    setBusy(true)
    try {
      let e = await post<HistoryExport>('/history_exports', made.body)
      setExp(e)
      // Built in the background: ask again until it is ready or has failed.
      for (let wait = 250; alive.current && e.status === 'building'; wait = Math.min(wait * 2, 2000)) {
        await new Promise((r) => setTimeout(r, wait))
        if (!alive.current) return
        e = await get<HistoryExport>(`/history_exports/${e.id}`)
        setExp(e)
      }
    } catch (err) {
      setError(err)
    } finally {
      if (alive.current) setBusy(false)
    }
  }

  return (
    <section class="panel" aria-labelledby="export-heading">
      <h2 id="export-heading">Export full history</h2>
      <p class="muted">
        Every action ever recorded that matches the filters above, not only the last 24 hours, as a CSV file.
        {q.scope === 'site' && q.folder ? ' In the export a folder includes everything inside it.' : ''}
        {me.site_admin ? '' : ' You can export the history of folders you administer.'}
      </p>
      <button type="button" onClick={start} disabled={busy}>
        {busy ? 'Exporting…' : 'Export full history'}
      </button>
      <div aria-live="polite">
        {exp?.status === 'building' ? <p role="status">Building the export…</p> : null}
        {exp?.status === 'ready' && exp.results_url ? (
          <p class="export-result notice" role="status">
            <span>
              Export ready:{' '}
              {exp.results_count === null || exp.results_count === undefined
                ? ''
                : `${exp.results_count} ${exp.results_count === 1 ? 'action' : 'actions'}.`}
            </span>
            <a class="button" href={exp.results_url} download>
              Download CSV
            </a>
          </p>
        ) : null}
      </div>
      {exp?.status === 'failed' ? (
        <p class="error" role="alert">
          The export failed: {exp.failure_reason ?? 'no reason was given'}.
        </p>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {describe(error)}
        </p>
      ) : null}
    </section>
  )
}
