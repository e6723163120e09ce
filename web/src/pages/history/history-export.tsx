import { useEffect, useRef, useState } from 'preact/hooks'
import { describe, get, type Me, post } from '../../api'
import { exportBody, type HistoryExport, type HistoryQuery } from './history-query'

/** Builds a CSV of every stored action the filters select, and offers it for download. */
export function HistoryExportPanel({ q, me }: { q: HistoryQuery; me: Me }) {
  const [exp, setExp] = useState<HistoryExport | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const alive = useRef(true)
  useEffect(
    () => () => {
      alive.current = false
    },
    [],
  )

  async function start() {
    setError(null)
    setExp(null)
    const made = exportBody(q)
    if ('refusal' in made) {
      setError(new Error(made.refusal))
      return
    }
    setBusy(true)
    try {
      let e = await post<HistoryExport>('/history_exports', made.body)
      setExp(e)
      // Built in the background: ask again until it is ready or has failed.
      for (let wait = 250; alive.current && e.status === 'building'; wait = Math.min(wait * 2, 2000)) {
        await new Promise((r) => setTimeout(r, wait))
        if (!alive.current) return
        e = await get<HistoryExport>(`/history_exports/${e.id}`)
        setExp(e)
      }
    } catch (err) {
      setError(err)
    } finally {
      if (alive.current) setBusy(false)
    }
  }

  return (
    <section class="panel" aria-labelledby="export-heading">
      <h2 id="export-heading">Export full history</h2>
      <p class="muted">
        Every action ever recorded that matches the filters above, not only the last 24 hours, as a CSV file.
        {q.scope === 'site' && q.folder ? ' In the export a folder includes everything inside it.' : ''}
        {me.site_admin ? '' : ' You can export the history of folders you administer.'}
      </p>
      <button type="button" onClick={start} disabled={busy}>
        {busy ? 'Exporting…' : 'Export full history'}
      </button>
      <div aria-live="polite">
        {exp?.status === 'building' ? <p role="status">Building the export…</p> : null}
        {exp?.status === 'ready' && exp.results_url ? (
          <p class="export-result notice" role="status">
            <span>
              Export ready:{' '}
              {exp.results_count === null || exp.results_count === undefined
                ? ''
                : `${exp.results_count} ${exp.results_count === 1 ? 'action' : 'actions'}.`}
            </span>
            <a class="button" href={exp.results_url} download>
              Download CSV
            </a>
          </p>
        ) : null}
      </div>
      {exp?.status === 'failed' ? (
        <p class="error" role="alert">
          The export failed: {exp.failure_reason ?? 'no reason was given'}.
        </p>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {describe(error)}
        </p>
      ) : null}
    </section>
  )
}
