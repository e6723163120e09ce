import { ApiError, describe, encodePath, type Me, type Query } from '../../api'

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

export interface HistoryExport {
  id: number
  status: 'building' | 'ready' | 'failed'
  results_url: string | null
  results_count?: number | null
  failure_reason: string | null
}

export interface User {
  id: number
  username: string
}

export type Scope = 'site' | 'folder' | 'file'

/** What the page shows, as the address keeps it (`#/history?scope=site&user_id=3…`). */
export interface HistoryQuery {
  scope: Scope
  user: string
  folder: string
  path: string
  start: string
  end: string
  perPage: string
}

export const PER_PAGE = ['25', '50', '100', '250']

export function readQuery(params: URLSearchParams, me: Me): HistoryQuery {
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

export function toParams(q: HistoryQuery): Record<string, string> {
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

export const trimSlashes = (s: string) => s.trim().replace(/^\/+|\/+$/g, '')

/** The API call behind a view: `/history` with filters, or the history of one folder or file. */
export function listCall(q: HistoryQuery): { path: string; query: Query } {
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
export function ready(q: HistoryQuery, me: Me): boolean {
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

/** The export's query: the same filters, over every stored action instead of the last 24 hours. */
export function exportBody(q: HistoryQuery): { body: Record<string, string> } | { refusal: string } {
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
