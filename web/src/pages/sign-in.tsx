import { useState } from 'preact/hooks'
import { ApiError, login } from '../api'
import { Field, PasswordField, useSubmit } from '../components/forms'
import { ErrorBox } from '../ui'

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
      return `Too many failed sign-ins from this address.${wait}`
    case 'not-authenticated/one-time-password-incorrect':
      return 'Wrong code, or a code already used. Enter the code your authenticator app shows now.'
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
  // Asked for once the password was right and the user signs in with a second factor.
  const [codeNeeded, setCodeNeeded] = useState(false)
  const [code, setCode] = useState('')
  const { error, busy, submit } = useSubmit(async () => {
    try {
      await login(username.trim(), password, codeNeeded ? code.trim() : undefined)
    } catch (err) {
      if (err instanceof ApiError && err.type === 'not-authorized/two-factor-authentication-required') {
        setCodeNeeded(true)
        return
      }
      setCode('')
      if (!codeNeeded) setPassword('')
      throw new Error(signInMessage(err))
    }
  })

  return (
    <main class="sign-in">
      <form onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to Wharf</h1>
        {codeNeeded ? (
          <>
            <p id="code-help">
              Enter the 6-digit code your authenticator app shows for {username.trim()}, or one of your
              recovery codes.
            </p>
            <Field
              label="Authentication code"
              name="otp"
              autocomplete="one-time-code"
              aria-describedby="code-help"
              required
              maxLength={64}
              value={code}
              onValue={setCode}
            />
          </>
        ) : (
          <>
            <Field
              label="Username"
              name="username"
              autocomplete="username"
              required
              value={username}
              onValue={setUsername}
            />
            <PasswordField
              label="Password"
              name="password"
              current
              required
              value={password}
              onValue={setPassword}
            />
          </>
        )}
        <ErrorBox error={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : codeNeeded ? 'Verify' : 'Sign in'}
        </button>
        {codeNeeded ? (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setCodeNeeded(false)
              setCode('')
              setPassword('')
            }}
          >
            Back
          </button>
        ) : null}
      </form>
    </main>
  )
}
