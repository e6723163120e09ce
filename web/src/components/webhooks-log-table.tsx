import { Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { ApiError, describe, post } from '../api'
import { ColumnHeads, formatBytes, formatDate } from '../ui'
import type { LogRecord } from './webhooks-chart'

/** JSON shown indented; anything else as it is. */
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

type RetryState =
  | { state: 'sending' }
  | { state: 'queued' }
  | { state: 'error'; message: string }
  | { state: 'refused'; message: string }

/** The log records, one row each, with their details on demand and a retry for failures. */
export function WebhookLogTable({
  records,
  order,
  onRefresh,
}: {
  records: LogRecord[]
  order: 'newest' | 'oldest'
  onRefresh: () => void
}) {
  const [open, setOpen] = useState<Set<number>>(new Set())
  const [retries, setRetries] = useState<Record<number, RetryState>>({})

  async function retry(id: number) {
    setRetries((r) => ({ ...r, [id]: { state: 'sending' } }))
    try {
      await post(`/action_webhook_failures/${id}/retry`)
      setRetries((r) => ({ ...r, [id]: { state: 'queued' } }))
    } catch (err) {
      // 422: delivered by an attempt made after the results were read; the answer will not
      // change, so the button goes.
      const next: RetryState =
        err instanceof ApiError && err.status === 422
          ? { state: 'refused', message: err.message }
          : { state: 'error', message: describe(err) }
      setRetries((r) => ({ ...r, [id]: next }))
    }
  }

  function toggle(id: number) {
    const next = new Set(open)
    if (next.has(id)) next.delete(id)
    else next.add(id)
    setOpen(next)
  }

  if (records.length === 0) return <p class="muted">No webhook requests match these filters.</p>
  return (
    <div class="table-wrap">
      <table class="wh-log cards">
        <caption class="visually-hidden">Webhook requests, {order} first</caption>
        <ColumnHeads
          columns={[
            'Sent',
            'Endpoint',
            'Event',
            'Status',
            { label: 'Attempt', num: true },
            { label: 'Response', num: true },
            { label: 'Actions', hidden: true },
          ]}
        />
        <tbody>
          {records.map((r) => {
            const shown = open.has(r.id)
            const rs = retries[r.id]
            // The API refuses to send again a notification a later attempt delivered (whether
            // or not the filters show that attempt), so such a record is not offered a retry.
            const deliveredBy = r.success ? null : (r.delivered_by_attempt ?? null)
            return (
              <Fragment key={r.id}>
                <tr data-record-id={r.id} class={r.success ? '' : 'wh-row-failed'}>
                  <td class="wh-nowrap">{formatDate(new Date(r.created_at * 1000).toISOString())}</td>
                  <td class="wh-break wh-wide wide">{r.request_url}</td>
                  <td class="wh-wide wide">
                    {r.operation}
                    {r.path ? (
                      <>
                        {' '}
                        <code class="wh-break">{r.path}</code>
                      </>
                    ) : null}
                  </td>
                  <td>
                    <span class={`badge ${r.success ? 'ok' : 'bad'}`}>
                      {r.status < 100 ? `Network error ${r.status}` : r.status}
                    </span>
                    <div class="muted wh-small">{r.message}</div>
                  </td>
                  <td class="num" data-label="Attempt">
                    {r.attempt}
                  </td>
                  <td class="num wh-nowrap" data-label="Response">
                    {formatBytes(r.response_size)}
                  </td>
                  <td>
                    <div class="wh-row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={shown}
                        aria-controls={`wh-details-${r.id}`}
                        onClick={() => toggle(r.id)}
                      >
                        Details<span class="visually-hidden"> of request {r.id}</span>
                      </button>
                      {deliveredBy !== null ? (
                        <span class="muted wh-small wh-delivered-later">
                          Delivered by attempt {deliveredBy}
                        </span>
                      ) : r.success || rs?.state === 'refused' ? null : (
                        <button
                          type="button"
                          disabled={rs?.state === 'sending' || rs?.state === 'queued'}
                          onClick={() => retry(r.id)}
                        >
                          {rs?.state === 'sending' ? 'Retrying…' : 'Retry'}
                          <span class="visually-hidden"> request {r.id}</span>
                        </button>
                      )}
                    </div>
                    {rs?.state === 'queued' && deliveredBy === null ? (
                      <p class="notice wh-small" role="status">
                        Retry queued: the new attempt appears in the log once sent.{' '}
                        <button type="button" class="secondary" onClick={onRefresh}>
                          Refresh
                        </button>
                      </p>
                    ) : null}
                    {(rs?.state === 'error' || rs?.state === 'refused') && deliveredBy === null ? (
                      <p class="error wh-small" role="alert">
                        {rs.message}
                      </p>
                    ) : null}
                  </td>
                </tr>
                {shown ? (
                  <tr id={`wh-details-${r.id}`} class="wh-details">
                    <td colSpan={7}>
                      <Details r={r} />
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            )
          })}
        </tbody>
      </table>
    </div>
  )
}

function Details({ r }: { r: LogRecord }) {
  return (
    <div class="wh-details-body">
      <p>
        <strong>
          {r.request_method} {r.request_url}
        </strong>{' '}
        · {r.message} · folder <code>{r.folder || '/'}</code> ·{' '}
        {r.behavior_id === null ? "site's listener" : `behavior ${r.behavior_id}`} · record {r.id}
      </p>
      <div class="wh-details-grid">
        <section>
          <h3 class="wh-h3">Request headers</h3>
          <pre>{pretty(r.request_headers)}</pre>
        </section>
        <section>
          <h3 class="wh-h3">Payload</h3>
          <pre>{pretty(r.request_body)}</pre>
        </section>
        <section>
          <h3 class="wh-h3">Response body ({formatBytes(r.response_size)})</h3>
          {r.response_body ? <pre>{r.response_body}</pre> : <p class="muted">(empty)</p>}
        </section>
      </div>
    </div>
  )
}
