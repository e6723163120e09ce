/**
 * The web interface's only way to the server: Wharf's public REST API, signed in with a session
 * (X-ServiceAPI-Auth), exactly as any other client would use it.
 */
export const API = '/api/rest/v1'
const SESSION_KEY = 'wharf.session'

/** An error answer of the API, with the spec's fields. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly title: string = '',
    readonly fieldErrors: Record<string, string[]> = {},
    readonly retryAfter: number | null = null,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

type Listener = (signedIn: boolean) => void
const listeners = new Set<Listener>()

export function sessionId(): string | null {
  return sessionStorage.getItem(SESSION_KEY)
}

function setSession(id: string | null): void {
  if (id === null) sessionStorage.removeItem(SESSION_KEY)
  else sessionStorage.setItem(SESSION_KEY, id)
  for (const l of listeners) l(id !== null)
}

/** Called when the user signs in or out, or the server ends the session. */
export function onSessionChange(l: Listener): () => void {
  listeners.add(l)
  return () => listeners.delete(l)
}

/**
 * One of Wharf's signed links on the page's own origin: the server signs it with its BASE_URL,
 * which may name another host than the one the browser reached, and the page talks to its own.
 */
export function ownOrigin(uri: string): string {
  const u = new URL(uri, location.href)
  return u.origin === location.origin ? u.href : `${u.pathname}${u.search}`
}

/** Path segments encoded one by one: slashes stay separators, everything else is escaped. */
export function encodePath(path: string): string {
  return path
    .split('/')
    .filter((s) => s !== '')
    .map(encodeURIComponent)
    .join('/')
}

export type Query = Record<string, string | number | boolean | undefined | null>

function queryString(q: Query | undefined): string {
  if (!q) return ''
  const p = new URLSearchParams()
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v))
  const s = p.toString()
  return s ? `?${s}` : ''
}

export interface Answer<T> {
  data: T
  status: number
  /** Cursor of the next page of a list, if there is one. */
  next: string | null
}

/** One API call; an error answer becomes an ApiError, a lost session signs the user out. */
export async function request<T>(
  method: string,
  path: string,
  opts: { query?: Query; body?: unknown; headers?: Record<string, string>; anonymous?: boolean } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers }
  // A share link's visitor calls the public API as nobody, even in a tab with a session.
  const sid = opts.anonymous ? null : sessionId()
  if (sid) headers['X-ServiceAPI-Auth'] = sid
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(`${API}${path}${queryString(opts.query)}`, {
      method,
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    })
  } catch {
    throw new ApiError(
      0,
      'network-error',
      'The server could not be reached. Check your connection and try again.',
    )
  }
  const text = await res.text()
  const data = text ? safeJson(text) : null
  if (!res.ok) {
    const e = (data ?? {}) as Record<string, any>
    const err = new ApiError(
      res.status,
      String(e['type'] ?? `http-${res.status}`),
      String(e['error'] ?? `The server answered ${res.status}`),
      String(e['title'] ?? ''),
      (e['model_errors'] as Record<string, string[]>) ?? {},
      res.headers.has('retry-after') ? Number(res.headers.get('retry-after')) : null,
    )
    // Only the session the request was sent with has ended: a late answer to the previous
    // user's request must not sign out whoever has signed in since.
    // A wrong code while enrolling an authenticator is no ended session (its types are 401 too).
    const codeRefusal = TWO_FACTOR_REFUSALS.has(err.type)
    if (res.status === 401 && sid && sid === sessionId() && path !== '/sessions' && !codeRefusal)
      setSession(null)
    throw err
  }
  return { data: data as T, status: res.status, next: res.headers.get('X-Files-Cursor-Next') }
}

const TWO_FACTOR_REFUSALS = new Set([
  'not-authenticated/one-time-password-incorrect',
  'not-authenticated/two-factor-authentication-error',
  'not-authenticated/two-factor-authentication-setup-expired',
])

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return { error: text }
  }
}

export const get = <T>(path: string, query?: Query) => request<T>('GET', path, { query }).then((a) => a.data)
export const post = <T>(path: string, body?: unknown) =>
  request<T>('POST', path, { body: body ?? {} }).then((a) => a.data)
export const patch = <T>(path: string, body: unknown) =>
  request<T>('PATCH', path, { body }).then((a) => a.data)
export const del = <T>(path: string, query?: Query) =>
  request<T>('DELETE', path, { query }).then((a) => a.data)

/** One page of a list endpoint and the cursor of the next. */
export async function page<T>(path: string, query: Query = {}): Promise<{ items: T[]; next: string | null }> {
  const a = await request<T[]>('GET', path, { query })
  return { items: a.data ?? [], next: a.next }
}

/** Every record of a list endpoint (for short lists: keys, users, apps), page after page. */
export async function all<T>(path: string, query: Query = {}, limit = 10_000): Promise<T[]> {
  const out: T[] = []
  let cursor: string | null = null
  do {
    const p: { items: T[]; next: string | null } = await page<T>(path, { ...query, per_page: 1000, cursor })
    out.push(...p.items)
    cursor = p.next
  } while (cursor && out.length < limit)
  return out
}

export interface Me {
  id: number
  username: string
  name: string | null
  site_admin: boolean
  /** Reads what a site admin reads; every session of theirs is read-only. */
  readonly_site_admin?: boolean
  /** May create share links (site admins always may). */
  attachments_permission?: boolean
  /** The user must choose a new password before anything else (flagged, or expired). */
  require_password_change?: boolean
  password_expired?: boolean
}

/**
 * Signs in; the session is marked as the web interface's, so its actions record interface `web`.
 * `otp`: the code of the user's authenticator (or a recovery code), once the server asked for it.
 */
export async function login(username: string, password: string, otp?: string): Promise<void> {
  const res = await fetch(`${API}/sessions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Wharf-Interface': 'web' },
    body: JSON.stringify({ username, password, ...(otp === undefined ? {} : { otp }) }),
  }).catch(() => null)
  if (!res)
    throw new ApiError(
      0,
      'network-error',
      'The server could not be reached. Check your connection and try again.',
    )
  const body = safeJson(await res.text()) as Record<string, any>
  if (!res.ok) {
    throw new ApiError(
      res.status,
      String(body['type'] ?? `http-${res.status}`),
      String(body['error'] ?? 'Sign-in failed'),
      String(body['title'] ?? ''),
      {},
      res.headers.has('retry-after') ? Number(res.headers.get('retry-after')) : null,
    )
  }
  setSession(String(body['id']))
}

export async function logout(): Promise<void> {
  try {
    await request('DELETE', '/sessions')
  } finally {
    setSession(null)
  }
}

/** Human words for an API error, as the web interface shows it. */
export function describe(err: unknown): string {
  if (!(err instanceof ApiError)) return err instanceof Error ? err.message : String(err)
  const fields = Object.entries(err.fieldErrors).flatMap(([f, msgs]) =>
    msgs.map((m) => `${f.replace(/_/g, ' ')} ${m}`),
  )
  return fields.length ? `${err.message}: ${fields.join('; ')}` : err.message
}
