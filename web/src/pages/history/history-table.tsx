import { useState } from 'preact/hooks'
import { type Me, page } from '../../api'
import { ColumnHeads, formatDate, Loading, useAsync } from '../../ui'
import { type Action, type HistoryQuery, historyMessage, listCall, ready, trimSlashes } from './history-query'

/** The actions of the last 24 hours that the filters select, a page at a time. */
export function HistoryTable({ q, me }: { q: HistoryQuery; me: Me }) {
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
            <ColumnHeads columns={['Time', 'User', 'Action', 'Path', 'Interface', 'IP', 'Details']} />
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
