import { useEffect, useState } from 'preact/hooks'
import QRCode from 'qrcode'
import { get, type Me, patch, post } from '../api'
import { withReauthentication } from '../components/accounts-reauth'
import { Field, PasswordField, useSubmit } from '../components/forms'
import type { Route } from '../router'
import { CopyButton, ErrorBox, formatDate, Loading, Notice, PageTitle, useAsync } from '../ui'
import './admin.css'

interface Method {
  id: number
  method_type: string
  name: string
  confirmed: boolean
  created_at: string
  otpauth_uri?: string
  recovery_codes?: string[]
}

/**
 * Two-factor sign-in: the user's authenticator apps, the enrolment of a new one (its QR code, then
 * a first code) and the recovery codes shown once. `required`: the session can do nothing else
 * until an authenticator is confirmed; `onEnrolled` is then called.
 */
export function TwoFactorPage({
  required = false,
  onEnrolled,
}: {
  route?: Route
  me: Me
  required?: boolean
  onEnrolled?: () => void
}) {
  const methods = useAsync(() => get<Method[]>('/two_factor_authentication_methods'), [])
  const [setup, setSetup] = useState<Method | null>(null)
  const [codes, setCodes] = useState<string[] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  const confirmed = (methods.data ?? []).filter((m) => m.confirmed)

  return (
    <section class="admin-page">
      <PageTitle>Two-factor sign-in</PageTitle>
      {required && !codes ? (
        <p class="notice" role="alert">
          Your account must sign in with a second factor. Set up an authenticator app to continue.
        </p>
      ) : null}
      <p class="muted">
        With an authenticator app (Google Authenticator, Aegis, 1Password…), signing in takes your password
        and the 6-digit code the app shows. SFTP asks for the code after the password; for FTP, send it after
        the password and a colon (<code>password:123456</code>); WebDAV and scripts use an API key.
      </p>
      {message ? <Notice>{message}</Notice> : null}
      {codes ? (
        <RecoveryCodes
          codes={codes}
          onDone={() => {
            setCodes(null)
            onEnrolled?.()
          }}
        />
      ) : setup ? (
        <Enrolment
          method={setup}
          onConfirmed={(m) => {
            setSetup(null)
            setCodes(m.recovery_codes ?? [])
            methods.reload()
          }}
          onCancel={() => setSetup(null)}
        />
      ) : (
        <StartEnrolment onStarted={setSetup} />
      )}

      <h2 id="methods-heading">Your authenticators</h2>
      {methods.loading && !methods.data ? <Loading /> : null}
      <ErrorBox error={methods.error} />
      {methods.data && confirmed.length === 0 ? <p class="muted">No authenticator set up yet.</p> : null}
      {confirmed.length > 0 ? (
        <ul class="plain" aria-labelledby="methods-heading">
          {confirmed.map((m) => (
            <MethodItem
              key={m.id}
              method={m}
              onRemoved={() => {
                setMessage(`${m.name} removed.`)
                methods.reload()
              }}
            />
          ))}
        </ul>
      ) : null}
    </section>
  )
}

function StartEnrolment({ onStarted }: { onStarted: (m: Method) => void }) {
  const { error, busy, submit } = useSubmit(async () => {
    onStarted(await post<Method>('/two_factor_authentication_methods', { method_type: 'totp' }))
  })
  return (
    <form onSubmit={submit}>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        Set up an authenticator app
      </button>
    </form>
  )
}

function Enrolment({
  method,
  onConfirmed,
  onCancel,
}: {
  method: Method
  onConfirmed: (m: Method) => void
  onCancel: () => void
}) {
  const uri = method.otpauth_uri ?? ''
  const secret = new URL(uri).searchParams.get('secret') ?? ''
  const [qr, setQr] = useState<string | null>(null)
  const [code, setCode] = useState('')
  useEffect(() => {
    QRCode.toDataURL(uri, { margin: 2, width: 220 }).then(setQr, () => setQr(null))
  }, [uri])
  const { error, busy, submit } = useSubmit(async () => {
    onConfirmed(await patch<Method>(`/two_factor_authentication_methods/${method.id}`, { otp: code.trim() }))
  })
  return (
    <form onSubmit={submit} aria-labelledby="enrol-heading">
      <h2 id="enrol-heading">Scan this QR code with your authenticator app</h2>
      {qr ? <img src={qr} width={220} height={220} alt="QR code of the authenticator's secret" /> : null}
      <p>
        Or enter this key by hand: <code data-testid="totp-secret">{secret}</code>{' '}
        <CopyButton text={secret} label="Copy key" />
      </p>
      <Field
        label="Code from the app"
        name="otp"
        autocomplete="one-time-code"
        required
        maxLength={6}
        value={code}
        onValue={setCode}
      />
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        Confirm
      </button>{' '}
      <button type="button" class="secondary" onClick={onCancel}>
        Cancel
      </button>
    </form>
  )
}

function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  return (
    <section aria-labelledby="codes-heading">
      <h2 id="codes-heading">Your recovery codes</h2>
      <p class="notice" role="status">
        Two-factor sign-in is on. Keep these codes somewhere safe: each signs you in once without your phone.
        They are shown only now.
      </p>
      <ul class="plain recovery-codes" aria-label="Recovery codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <CopyButton text={codes.join('\n')} label="Copy codes" />{' '}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </section>
  )
}

function MethodItem({ method, onRemoved }: { method: Method; onRemoved: () => void }) {
  const [asking, setAsking] = useState(false)
  const [password, setPassword] = useState('')
  const { error, busy, submit } = useSubmit(async () => {
    await withReauthentication('DELETE', `/two_factor_authentication_methods/${method.id}`, {}, password)
    onRemoved()
  })
  return (
    <li>
      {method.name}, added {formatDate(method.created_at)}{' '}
      {asking ? (
        <form onSubmit={submit} class="inline">
          <PasswordField label="Your password" current required value={password} onValue={setPassword} />
          <ErrorBox error={error} />
          <button type="submit" disabled={busy}>
            Remove {method.name}
          </button>
        </form>
      ) : (
        <button type="button" class="secondary" onClick={() => setAsking(true)}>
          Remove…
        </button>
      )}
    </li>
  )
}
