import { useEffect, useRef, useState } from 'preact/hooks'
import { get, type Me, page, post } from '../api'
import { WebhookEndpoints } from '../components/webhook-endpoints'
import { type LogRecord, WebhookChart } from '../components/webhooks-chart'
import { WebhookLogTable } from '../components/webhooks-log-table'
import type { Route } from '../router'
import { ErrorBox, Loading, PageTitle } from '../ui'
import './webhooks.css'

/** An ActionNotificationExport as the API shows it. */
interface LogExport {
  id: number
  status: 'building' | 'ready' | 'failed'
  start_at: string | null
  end_at: string | null
  results_url: string | null
  failure_reason: string | null
  /** How many records a ready export holds (a Wharf extension). */
  results_count: number | null
}

interface Filters {
  /** datetime-local values (the browser's time zone); an empty end means "now". */
  start: string
  end: string
  success: 'any' | 'true' | 'false'
  status: string
  path: string
  folder: string
  /** Webhook behavior ids (comma-separated), as query_behavior_id takes them. */
  behavior: string
}

/** What one run of the filters produced: the export, the records read so far, the next cursor. */
interface Loaded {
  exp: LogExport
  records: LogRecord[]
  next: string | null
  startMs: number
  endMs: number
}

/** `YYYY-MM-DDTHH:MM` in local time, as a datetime-local input holds it. */
function localInput(ms: number): string {
  const d = new Date(ms)
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`
}

const DAY = 24 * 3600 * 1000
const defaults = (): Filters => ({
  start: localInput(Date.now() - DAY),
  end: '',
  success: 'any',
  status: '',
  path: '',
  folder: '',
  behavior: '',
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Pages read at once when the log is (re)loaded. The results only go forward, oldest first, so
 * the newest requests are known only once the pages before them are read.
 */
const PAGES_AT_ONCE = 10

export type Order = 'newest' | 'oldest'

/** The records in the order asked for: by the time sent, then by record. */
function ordered(records: LogRecord[], order: Order): LogRecord[] {
  const dir = order === 'newest' ? -1 : 1
  return [...records].sort((a, b) => dir * (a.created_at - b.created_at || a.id - b.id))
}

/** Activity > Webhook logs: a webhook-log export over the filters, read back page by page. */
export function WebhookLogsPage({ route }: { route: Route; me: Me }) {
  const perPage = Math.min(10_000, Math.max(1, Number(route.params.get('per_page')) || 1000))
  const [filters, setFilters] = useState<Filters>(defaults)
  const [loaded, setLoaded] = useState<Loaded | null>(null)
  const [phase, setPhase] = useState<'idle' | 'building' | 'reading'>('idle')
  const [error, setError] = useState<unknown>(null)
  const [more, setMore] = useState(false)
  const [order, setOrder] = useState<Order>('newest')
  // Each run has a number; an older run that is still polling stops at its next step.
  const run = useRef(0)
  useEffect(() => {
    load(filters)
    return () => {
      run.current = -1
    }
  }, [])

  async function load(f: Filters) {
    const n = ++run.current
    setError(null)
    setPhase('building')
    try {
      const startMs = f.start ? new Date(f.start).getTime() : Number.NaN
      const endMs = f.end ? new Date(f.end).getTime() : Date.now()
      const body: Record<string, unknown> = {
        end_at: new Date(endMs).toISOString(),
        ...(Number.isFinite(startMs) ? { start_at: new Date(startMs).toISOString() } : {}),
        ...(f.success !== 'any' ? { query_success: f.success === 'true' } : {}),
        ...(f.status.trim() ? { query_status: f.status.trim() } : {}),
        ...(f.path.trim() ? { query_path: f.path.trim() } : {}),
        ...(f.folder.trim() ? { query_folder: f.folder.trim() } : {}),
        ...(f.behavior.trim() ? { query_behavior_id: f.behavior.trim() } : {}),
      }
      let exp = await post<LogExport>('/action_notification_exports', body)
      for (let wait = 200; exp.status === 'building'; wait = Math.min(wait * 1.5, 2000)) {
        await sleep(wait)
        if (n !== run.current) return
        exp = await get<LogExport>(`/action_notification_exports/${exp.id}`)
      }
      if (n !== run.current) return
      if (exp.status === 'failed')
        throw new Error(`The export failed: ${exp.failure_reason ?? 'no reason given'}`)
      setPhase('reading')
      const records: LogRecord[] = []
      let next: string | null = null
      for (let pages = 0; pages === 0 || (next && pages < PAGES_AT_ONCE); pages++) {
        const p: { items: LogRecord[]; next: string | null } = await page<LogRecord>(
          '/action_notification_export_results',
          { action_notification_export_id: exp.id, per_page: perPage, ...(next ? { cursor: next } : {}) },
        )
        if (n !== run.current) return
        records.push(...p.items)
        next = p.next
      }
      const firstMs = Number.isFinite(startMs)
        ? startMs
        : Math.min(endMs - DAY, ...records.map((r) => r.created_at * 1000))
      setLoaded({ exp, records, next, startMs: firstMs, endMs })
    } catch (err) {
      if (n === run.current) setError(err)
    } finally {
      if (n === run.current) setPhase('idle')
    }
  }

  async function loadMore() {
    if (!loaded?.next) return
    const n = run.current
    setMore(true)
    setError(null)
    try {
      const p = await page<LogRecord>('/action_notification_export_results', {
        action_notification_export_id: loaded.exp.id,
        per_page: perPage,
        cursor: loaded.next,
      })
      if (n !== run.current) return
      setLoaded({ ...loaded, records: [...loaded.records, ...p.items], next: p.next })
    } catch (err) {
      setError(err)
    } finally {
      setMore(false)
    }
  }

  const set = (k: keyof Filters) => (e: { currentTarget: { value: string } }) =>
    setFilters({ ...filters, [k]: e.currentTarget.value })
  const busy = phase !== 'idle'

  return (
    <section class="webhooks">
      <PageTitle
        actions={
          loaded?.exp.results_url ? (
            <a class="button secondary" href={loaded.exp.results_url} download>
              Download CSV
            </a>
          ) : null
        }
      >
        Webhook logs
      </PageTitle>
      <form
        class="panel wh-filters"
        aria-label="Filter the webhook log"
        onSubmit={(e) => {
          e.preventDefault()
          load(filters)
        }}
      >
        <div class="form-row">
          <label>
            From
            <input type="datetime-local" name="start" value={filters.start} onInput={set('start')} />
          </label>
          <label>
            <span>
              Until <span class="muted wh-hint">(empty: now)</span>
            </span>
            <input type="datetime-local" name="end" value={filters.end} onInput={set('end')} />
          </label>
          <label>
            Succeeded
            <select name="success" value={filters.success} onChange={set('success')}>
              <option value="any">Any</option>
              <option value="true">Yes</option>
              <option value="false">No</option>
            </select>
          </label>
          <label>
            Status
            <input
              name="status"
              inputMode="numeric"
              class="wh-narrow"
              placeholder="500, 7"
              value={filters.status}
              onInput={set('status')}
            />
          </label>
          <label>
            Path
            <input name="path" placeholder="inbox/report.pdf" value={filters.path} onInput={set('path')} />
          </label>
          <label>
            Folder
            <input name="folder" placeholder="inbox" value={filters.folder} onInput={set('folder')} />
          </label>
          <label>
            Behavior
            <input
              name="behavior"
              inputMode="numeric"
              class="wh-narrow"
              placeholder="id"
              title="Requests of these webhook behaviors (ids, comma-separated)"
              value={filters.behavior}
              onInput={set('behavior')}
            />
          </label>
        </div>
        <div class="actions wh-filter-actions">
          <button type="submit" disabled={busy}>
            {loaded ? 'Refresh' : 'Show'}
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={() => {
              const d = defaults()
              setFilters(d)
              load(d)
            }}
          >
            Last 24 hours
          </button>
        </div>
      </form>
      {phase === 'building' ? (
        <p class="muted" role="status">
          Preparing the log…
        </p>
      ) : null}
      {phase === 'reading' ? <Loading /> : null}
      <ErrorBox error={error} />
      {loaded && phase === 'idle' ? (
        <>
          <WebhookChart
            records={loaded.records}
            startMs={loaded.startMs}
            endMs={loaded.endMs}
            partial={!!loaded.next}
          />
          {loaded.records.length > 0 ? (
            <label class="inline wh-order">
              Order
              <select name="order" value={order} onChange={(e) => setOrder(e.currentTarget.value as Order)}>
                <option value="newest">Newest first</option>
                <option value="oldest">Oldest first</option>
              </select>
            </label>
          ) : null}
          {loaded.next && order === 'newest' ? (
            <p class="muted wh-partial" role="status">
              The log is read from its oldest record: the {loaded.records.length} read so far are shown newest
              first, and newer ones follow with Load more (or a narrower range).
            </p>
          ) : null}
          <WebhookLogTable
            records={ordered(loaded.records, order)}
            order={order}
            onRefresh={() => load(filters)}
          />
          {loaded.next ? (
            <div class="actions wh-more">
              <button type="button" class="secondary" disabled={more} onClick={loadMore}>
                {more ? 'Loading…' : 'Load more'}
              </button>
              <span class="muted">
                {loaded.records.length}
                {loaded.exp.results_count === null ? '' : ` of ${loaded.exp.results_count}`} records read so
                far.
              </span>
            </div>
          ) : null}
        </>
      ) : null}
      <WebhookEndpoints />
    </section>
  )
}
