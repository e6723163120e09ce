import { useState } from 'preact/hooks'
import { ApiError, all, patch, post } from '../api'
import { ErrorBox, formatDate, Loading, useAsync } from '../ui'

/** A WebhookEndpoint as the API shows it (the fields this panel uses). */
interface Endpoint {
  id: number
  behavior_id: number | null
  path: string | null
  url: string
  state: 'enabled' | 'failing' | 'disabled' | 'paused'
  consecutive_failures: number
  last_success_at: string | null
  last_failure_at: string | null
  last_failure_reason: string | null
  disabled_reason: string | null
  queued_count: number
  oldest_queued_age_seconds: number | null
  day_attempts: number
  day_success_rate: number | null
  day_latency_p50_ms: number | null
  day_latency_p99_ms: number | null
}

const percent = (r: number | null) => (r === null ? '—' : `${Math.round(r * 1000) / 10} %`)
const ms = (v: number | null) => (v === null ? '—' : `${v} ms`)

/** Where an endpoint's notifications go, in words. */
const nameOf = (e: Endpoint) =>
  e.behavior_id === null ? 'Site listener' : `Behavior ${e.behavior_id} on /${e.path ?? ''}`

/**
 * The health of every webhook endpoint (the site listener, each URL of each webhook behavior),
 * beside the log: pause and enable, and recovery of past notifications with a dry-run count.
 */
export function WebhookEndpoints() {
  const list = useAsync(() => all<Endpoint>('/webhook_endpoints'), [])
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const act = async (work: () => Promise<unknown>) => {
    setBusy(true)
    setError(null)
    try {
      await work()
      list.reload()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  if (list.loading && !list.data) return <Loading />
  // Who may not see the endpoints sees the log's own refusal; this panel stays out of the way.
  if (list.error instanceof ApiError && list.error.status === 403) return null
  return (
    <section class="panel wh-endpoints" aria-labelledby="wh-endpoints-title">
      <h2 id="wh-endpoints-title" class="wh-h3">
        Endpoints
      </h2>
      <ErrorBox error={list.error ?? error} />
      {list.data && list.data.length === 0 ? <p class="muted">No webhook endpoint yet.</p> : null}
      {list.data && list.data.length > 0 ? (
        <table class="wh-endpoint-table">
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">State</th>
              <th scope="col">Last day</th>
              <th scope="col">Queued</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((e) => (
              <EndpointRow key={e.id} e={e} busy={busy} act={act} />
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  )
}

function EndpointRow({
  e,
  busy,
  act,
}: {
  e: Endpoint
  busy: boolean
  act: (work: () => Promise<unknown>) => Promise<void>
}) {
  const [recovering, setRecovering] = useState(false)
  const [since, setSince] = useState('')
  const [onlyFailed, setOnlyFailed] = useState(true)
  const [count, setCount] = useState<number | null>(null)
  const [queued, setQueued] = useState<number | null>(null)
  const body = (dry: boolean) => ({
    ...(since ? { since: new Date(since).toISOString() } : {}),
    only_failed: onlyFailed,
    dry_run: dry,
  })
  const off = e.state === 'paused' || e.state === 'disabled'
  return (
    <>
      <tr>
        <th scope="row">
          {nameOf(e)}
          <div class="muted wh-url">{e.url}</div>
        </th>
        <td>
          <span class={`wh-state wh-state-${e.state}`}>{e.state}</span>
          {e.state === 'disabled' && e.disabled_reason ? <div class="muted">{e.disabled_reason}</div> : null}
          {e.consecutive_failures > 0 ? (
            <div class="muted">
              {e.consecutive_failures} failures in a row; last {formatDate(e.last_failure_at)}:{' '}
              {e.last_failure_reason}
            </div>
          ) : null}
          {e.last_success_at ? <div class="muted">Last success {formatDate(e.last_success_at)}</div> : null}
        </td>
        <td>
          {e.day_attempts} attempts, {percent(e.day_success_rate)} ok
          <div class="muted">
            p50 {ms(e.day_latency_p50_ms)}, p99 {ms(e.day_latency_p99_ms)}
          </div>
        </td>
        <td>
          {e.queued_count}
          {e.oldest_queued_age_seconds !== null ? (
            <div class="muted">oldest {e.oldest_queued_age_seconds} s</div>
          ) : null}
        </td>
        <td class="actions">
          <button
            type="button"
            class="secondary"
            disabled={busy}
            aria-label={`${off ? 'Enable' : 'Pause'} ${nameOf(e)} (${e.url})`}
            onClick={() =>
              act(() => patch(`/webhook_endpoints/${e.id}`, { state: off ? 'enabled' : 'paused' }))
            }
          >
            {off ? 'Enable' : 'Pause'}
          </button>
          <button
            type="button"
            class="secondary"
            aria-expanded={recovering}
            aria-label={`Recover ${nameOf(e)} (${e.url})`}
            onClick={() => setRecovering(!recovering)}
          >
            Recover…
          </button>
        </td>
      </tr>
      {recovering ? (
        <tr>
          <td colSpan={5}>
            <form
              class="form-row wh-recover"
              aria-label={`Recover notifications of ${e.url}`}
              onSubmit={(ev) => {
                ev.preventDefault()
                act(async () => {
                  const r = await post<{ count: number }>(`/webhook_endpoints/${e.id}/recover`, body(false))
                  setQueued(r.count)
                  setCount(null)
                })
              }}
            >
              <label>
                Since
                <input
                  type="datetime-local"
                  name="since"
                  value={since}
                  onInput={(ev) => setSince(ev.currentTarget.value)}
                />
              </label>
              <label class="inline">
                <input
                  type="checkbox"
                  name="only_failed"
                  checked={onlyFailed}
                  onChange={(ev) => setOnlyFailed(ev.currentTarget.checked)}
                />
                Only failed ones
              </label>
              <button
                type="button"
                class="secondary"
                disabled={busy}
                onClick={() =>
                  act(async () => {
                    const r = await post<{ count: number }>(`/webhook_endpoints/${e.id}/recover`, body(true))
                    setCount(r.count)
                    setQueued(null)
                  })
                }
              >
                Count
              </button>
              <button type="submit" disabled={busy}>
                Send again
              </button>
              {count !== null ? (
                <span role="status">
                  {count} notification{count === 1 ? '' : 's'} would be sent again.
                </span>
              ) : null}
              {queued !== null ? (
                <span role="status">
                  {queued} notification{queued === 1 ? '' : 's'} queued again.
                </span>
              ) : null}
            </form>
          </td>
        </tr>
      ) : null}
    </>
  )
}
