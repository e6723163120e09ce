import { useEffect, useState } from 'preact/hooks'
import { WEBHOOK_OPERATIONS } from '../../../src/webhooks/webhook-operations'
import { ApiError, get, type Me, patch, post } from '../api'
import { SignatureExample } from '../components/webhooks-signature-example'
import type { Route } from '../router'
import { CopyButton, ErrorBox, Loading, Notice, PageTitle, useAsync } from '../ui'
import './webhooks.css'

/** GET /webhook_settings. */
export interface WebhookSettings {
  url: string | null
  triggers: string[]
  enabled: boolean
  verification_token: string
  signing_secret: string
  updated_at: string
}

/** POST /webhook_settings/test. */
interface TestResult {
  id: number
  success: boolean
  status: number
  message: string
  request_url: string
  response_size: number
  response_body: string
  duration_ms: number
}

/** The API's field names as the form labels them. */
const FIELD_NAMES: Record<string, string> = { url: 'Listener URL', triggers: 'Triggers', enabled: 'Enabled' }

/** Curl-style codes (network failures) are below 100; anything else is the listener's HTTP status. */
export function statusText(status: number): string {
  return status < 100 ? `network error ${status}` : `HTTP ${status}`
}

/** Developer settings: where webhooks go, what sends them, and how a listener checks them. */
export function DeveloperPage(_props: { route: Route; me: Me }) {
  const settings = useAsync(() => get<WebhookSettings>('/webhook_settings'), [])
  return (
    <section class="webhooks">
      <PageTitle>Developer</PageTitle>
      {settings.loading && !settings.data ? <Loading /> : null}
      <ErrorBox error={settings.error} />
      {settings.data ? <SettingsForm saved={settings.data} onSaved={settings.reload} /> : null}
    </section>
  )
}

function SettingsForm({ saved, onSaved }: { saved: WebhookSettings; onSaved: () => void }) {
  const [url, setUrl] = useState(saved.url ?? '')
  const [triggers, setTriggers] = useState<string[]>(saved.triggers)
  const [enabled, setEnabled] = useState(saved.enabled)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [done, setDone] = useState(false)
  useEffect(() => {
    setUrl(saved.url ?? '')
    setTriggers(saved.triggers)
    setEnabled(saved.enabled)
  }, [saved])

  const fieldErrors = error instanceof ApiError ? error.fieldErrors : {}
  const dirty =
    url.trim() !== (saved.url ?? '') ||
    enabled !== saved.enabled ||
    triggers.join('\n') !== saved.triggers.join('\n')
  // Operations the server knows, plus any it reports that this build does not (shown, never lost).
  const operations = [
    ...WEBHOOK_OPERATIONS,
    ...saved.triggers.filter((t) => !WEBHOOK_OPERATIONS.includes(t as never)),
  ]

  async function save(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    setDone(false)
    try {
      // Sent in the order the server lists them, so an unchanged selection reads as unchanged.
      const ordered = operations.filter((o) => triggers.includes(o))
      await patch<WebhookSettings>('/webhook_settings', {
        url: url.trim() || null,
        triggers: ordered,
        enabled,
      })
      setDone(true)
      onSaved()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  function toggle(op: string, on: boolean) {
    setDone(false)
    setTriggers((t) => (on ? [...t.filter((x) => x !== op), op] : t.filter((x) => x !== op)))
  }

  return (
    <>
      <form class="panel" onSubmit={save} noValidate aria-labelledby="wh-settings-title">
        <h2 id="wh-settings-title">Webhooks</h2>
        <p class="muted">
          Wharf sends an HTTP POST to your listener when a selected operation happens. Changes apply to the
          next notification.
        </p>
        <label>
          Listener URL
          <input
            type="url"
            name="url"
            class="wh-url"
            placeholder="https://example.com/wharf-webhook"
            value={url}
            aria-invalid={fieldErrors['url'] ? true : undefined}
            aria-describedby={fieldErrors['url'] ? 'wh-url-error' : undefined}
            onInput={(e) => {
              setUrl(e.currentTarget.value)
              setDone(false)
            }}
          />
        </label>
        {fieldErrors['url'] ? (
          <p id="wh-url-error" class="bad wh-field-error">
            Listener URL {fieldErrors['url'].join('; ')}
          </p>
        ) : null}
        <fieldset aria-describedby={fieldErrors['triggers'] ? 'wh-triggers-error' : undefined}>
          <legend>Send a webhook on</legend>
          <div class="wh-triggers">
            {operations.map((op) => (
              <label class="inline" key={op}>
                <input
                  type="checkbox"
                  name="triggers"
                  value={op}
                  checked={triggers.includes(op)}
                  onChange={(e) => toggle(op, e.currentTarget.checked)}
                />
                {op}
              </label>
            ))}
          </div>
          {fieldErrors['triggers'] ? (
            <p id="wh-triggers-error" class="bad wh-field-error">
              Triggers {fieldErrors['triggers'].join('; ')}
            </p>
          ) : null}
        </fieldset>
        <label class="inline">
          <input
            type="checkbox"
            name="enabled"
            checked={enabled}
            onChange={(e) => {
              setEnabled(e.currentTarget.checked)
              setDone(false)
            }}
          />
          Webhooks enabled
        </label>
        {Object.keys(fieldErrors).length ? (
          <p class="error" role="alert">
            Not saved.{' '}
            {Object.entries(fieldErrors)
              .flatMap(([f, msgs]) => msgs.map((m) => `${FIELD_NAMES[f] ?? f} ${m}.`))
              .join(' ')}
          </p>
        ) : (
          <ErrorBox error={error} />
        )}
        {done && !dirty ? <Notice>Webhook settings saved.</Notice> : null}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : 'Save'}
          </button>
        </div>
      </form>
      <TestPanel saved={saved} dirty={dirty} />
      <Secrets saved={saved} />
    </>
  )
}

function TestPanel({ saved, dirty }: { saved: WebhookSettings; dirty: boolean }) {
  const [busy, setBusy] = useState(false)
  const [result, setResult] = useState<TestResult | null>(null)
  const [error, setError] = useState<unknown>(null)

  async function send() {
    setBusy(true)
    setError(null)
    setResult(null)
    try {
      setResult(await post<TestResult>('/webhook_settings/test'))
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <section class="panel" aria-labelledby="wh-test-title">
      <h2 id="wh-test-title">Send a test</h2>
      <p class="muted">
        Sends one notification with operation <code>Test</code> to the saved listener URL, even while webhooks
        are disabled, and shows the listener's answer. It is recorded in the webhook log.
      </p>
      {saved.url ? null : <p class="muted">Save a listener URL first.</p>}
      {saved.url && dirty ? (
        <p class="muted">The test goes to the saved URL: save your changes first.</p>
      ) : null}
      <div class="actions">
        <button type="button" class="secondary" disabled={busy || !saved.url} onClick={send}>
          {busy ? 'Sending…' : 'Send test'}
        </button>
      </div>
      <ErrorBox error={error} />
      {result ? <TestOutcome r={result} /> : null}
    </section>
  )
}

function TestOutcome({ r }: { r: TestResult }) {
  return (
    <div class="wh-test-result" role="status">
      <p>
        <span class={`badge ${r.success ? 'ok' : 'bad'}`}>{r.success ? 'Success' : 'Failure'}</span>{' '}
        <strong>{statusText(r.status)}</strong> {r.message} · {r.duration_ms} ms · {r.response_size} bytes
      </p>
      <p class="muted wh-break">Sent to {r.request_url}</p>
      <h3 class="wh-h3">Response body</h3>
      {r.response_body ? <pre>{r.response_body}</pre> : <p class="muted">(empty)</p>}
    </div>
  )
}

function Secrets({ saved }: { saved: WebhookSettings }) {
  return (
    <section class="panel" aria-labelledby="wh-secrets-title">
      <h2 id="wh-secrets-title">Verifying webhooks</h2>
      <p class="muted">Both values stay the same for every request.</p>
      <Secret
        label="Verification token"
        name="verification_token"
        value={saved.verification_token}
        copy="Copy token"
      />
      <Secret label="Signing secret" name="signing_secret" value={saved.signing_secret} copy="Copy secret" />
      <SignatureExample />
    </section>
  )
}

/** A value shown read-only, with a button that copies it. */
function Secret({ label, name, value, copy }: { label: string; name: string; value: string; copy: string }) {
  return (
    <div class="wh-secret">
      <label>
        {label}
        <input class="mono" readOnly value={value} name={name} />
      </label>
      <CopyButton text={value} label={copy} />
    </div>
  )
}
