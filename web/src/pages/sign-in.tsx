import { useState } from 'preact/hooks'
import { ApiError, login } from '../api'

/** The API's refusals of a login, in words a person can act on. */
export function signInMessage(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err)
  const wait = err.retryAfter ? ` Try again in ${minutes(err.retryAfter)}.` : ' Try again later.'
  switch (err.type) {
    case 'not-authenticated/invalid-username-or-password':
      return 'Wrong username or password.'
    case 'not-authenticated/locked-out':
      return `This account is locked after too many failed sign-ins.${wait}`
    case 'rate-limited/too-many-login-attempts':
      return `Too many sign-in attempts from this address.${wait}`
    case 'network-error':
      return err.message
    default:
      return err.message || 'Sign-in failed.'
  }
}

function minutes(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} seconds`
  return `${Math.ceil(seconds / 60)} minutes`
}

export function SignInPage() {
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await login(username.trim(), password)
    } catch (err) {
      setError(signInMessage(err))
      setPassword('')
    } finally {
      setBusy(false)
    }
  }

  return (
    <main class="sign-in">
      <form onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to Wharf</h1>
        <label>
          Username
          <input
            name="username"
            autocomplete="username"
            required
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
