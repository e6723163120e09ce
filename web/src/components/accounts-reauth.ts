import { API, ApiError, logout, sessionId } from '../api'

/**
 * A call that changes a password or deletes a user: through a session the API wants the signed-in
 * user's own password again (X-Service-Reauthentication), which api.ts's request() cannot send.
 */
export async function withReauthentication(
  method: 'PATCH' | 'DELETE',
  path: string,
  body: unknown,
  ownPassword: string,
): Promise<void> {
  const headers: Record<string, string> = {
    Accept: 'application/json',
    'Content-Type': 'application/json',
    'X-Service-Reauthentication': `password:${ownPassword}`,
  }
  const sid = sessionId()
  if (sid) headers['X-ServiceAPI-Auth'] = sid
  let res: Response
  try {
    res = await fetch(`${API}${path}`, { method, headers, body: JSON.stringify(body) })
  } catch {
    throw new ApiError(
      0,
      'network-error',
      'The server could not be reached. Check your connection and try again.',
    )
  }
  if (res.ok) return
  const text = await res.text()
  let e: Record<string, any> = {}
  try {
    e = JSON.parse(text) as Record<string, any>
  } catch {
    e = { error: text }
  }
  const type = String(e['type'] ?? `http-${res.status}`)
  const err = new ApiError(
    res.status,
    type,
    reauthMessage(type) ?? String(e['error'] ?? `The server answered ${res.status}`),
    String(e['title'] ?? ''),
    (e['model_errors'] as Record<string, string[]>) ?? {},
    res.headers.has('retry-after') ? Number(res.headers.get('retry-after')) : null,
  )
  // The third wrong password ends the session: go back to the sign-in page rather than fail on.
  if (type === 'not-authorized/reauthentication-failed-final' || res.status === 401) {
    await logout().catch(() => {})
  }
  throw err
}

function reauthMessage(type: string): string | null {
  switch (type) {
    case 'not-authorized/reauthentication-failed':
      return 'Your password was not accepted. Enter your own password (the one you signed in with).'
    case 'not-authorized/reauthentication-failed-final':
      return 'Your password was refused too many times; you have been signed out.'
    case 'rate-limited/reauthentication-rate-limited':
      return 'Too many password confirmations this hour. Try again later.'
    case 'not-authorized/reauthentication-needed-action':
      return 'Enter your own password to confirm this change.'
    default:
      return null
  }
}
