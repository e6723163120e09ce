import { ColumnHeads } from '../ui'
/** One ActionNotificationExportResult (a logged webhook request). */
export interface LogRecord {
  id: number
  /** Unix epoch seconds. */
  created_at: number
  status: number
  message: string
  success: boolean
  request_headers: string
  request_method: string
  request_url: string
  path: string
  folder: string
  attempt: number
  operation: string
  response_size: number
  response_body: string
  request_body: string
  /** The webhook behavior the request was for; null for the site's listener. */
  behavior_id: number | null
  /**
   * A failed record whose notification a later attempt has since delivered: that attempt's log
   * record and number (null otherwise), as the log stood when the page of results was read.
   */
  delivered_by_id: number | null
  delivered_by_attempt: number | null
}

const HOUR = 3600 * 1000
/** Bar widths tried in turn, so a long range still fits in about 72 bars. */
const STEPS = [1, 2, 3, 6, 12, 24, 48, 168].map((h) => h * HOUR)
const MAX_BARS = 72

export interface Bin {
  start: number
  ok: number
  failed: number
}

/** Deliveries per bar (an hour, or longer for long ranges), from local hour boundaries. */
export function binRecords(
  records: LogRecord[],
  startMs: number,
  endMs: number,
): { step: number; bins: Bin[] } {
  const span = Math.max(endMs - startMs, HOUR)
  const step = STEPS.find((s) => span / s <= MAX_BARS) ?? STEPS[STEPS.length - 1]!
  const first = new Date(startMs)
  first.setMinutes(0, 0, 0)
  if (step >= 24 * HOUR) first.setHours(0)
  const origin = first.getTime()
  const count = Math.max(1, Math.ceil((endMs - origin) / step))
  const bins: Bin[] = Array.from({ length: count }, (_, i) => ({
    start: origin + i * step,
    ok: 0,
    failed: 0,
  }))
  for (const r of records) {
    const i = Math.floor((r.created_at * 1000 - origin) / step)
    const bin = bins[Math.min(Math.max(i, 0), count - 1)]!
    if (r.success) bin.ok++
    else bin.failed++
  }
  return { step, bins }
}

function stepName(step: number): string {
  if (step === HOUR) return 'hour'
  if (step % (24 * HOUR) === 0) return step === 24 * HOUR ? 'day' : `${step / (24 * HOUR)} days`
  return `${step / HOUR} hours`
}

function label(ms: number, step: number): string {
  const d = new Date(ms)
  if (step >= 24 * HOUR) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
  return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
}

const short = (ms: number) =>
  new Date(ms).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' })

function range(ms: number, step: number): string {
  const from = short(ms)
  const to = new Date(ms + step).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
  return step >= 24 * HOUR ? from : `${from}–${to}`
}

/** A round top for the scale: 1, 2, 5 × 10ⁿ at or above the highest bar. */
function niceMax(n: number): number {
  if (n <= 4) return Math.max(n, 1)
  const p = 10 ** Math.floor(Math.log10(n))
  return ([1, 2, 5, 10].map((m) => m * p).find((v) => v >= n) ?? 10 * p) as number
}

/**
 * Classes of the time label `k` (counted in labels): at phone width every other one gives way, the
 * first is anchored by its start (clear of the counts at the left) and the one at the right edge by
 * its end, so their larger text stays in the drawing.
 */
function axisClass(k: number, last: boolean): string {
  const edge = last ? ' wh-axis-edge' : k === 0 ? ' wh-axis-first' : ''
  return `wh-axis wh-axis-x${k % 2 === 1 ? ' wh-axis-alt' : ''}${edge}`
}

const W = 720
const H = 200
const M = { left: 40, right: 30, top: 10, bottom: 30 }

/** Stacked bars of deliveries over time: successes below, failures above, with a table beside it. */
export function WebhookChart({
  records,
  startMs,
  endMs,
  partial,
}: {
  records: LogRecord[]
  startMs: number
  endMs: number
  partial: boolean
}) {
  const { step, bins } = binRecords(records, startMs, endMs)
  const ok = records.filter((r) => r.success).length
  const failed = records.length - ok
  const top = niceMax(Math.max(0, ...bins.map((b) => b.ok + b.failed)))
  const plotW = W - M.left - M.right
  const plotH = H - M.top - M.bottom
  const slot = plotW / bins.length
  const barW = Math.max(1, slot * 0.8)
  const y = (v: number) => M.top + plotH - (v / top) * plotH
  const ticks = top <= 4 ? Array.from({ length: top + 1 }, (_, i) => i) : [0, top / 2, top]
  const every = Math.ceil(bins.length / 8)
  const per = stepName(step)
  const summary =
    `Webhook deliveries per ${per}, ${short(startMs)} to ${short(endMs)}: ` +
    `${ok} succeeded, ${failed} failed${partial ? ' (records loaded so far)' : ''}`

  return (
    <figure class="panel wh-chart">
      <figcaption>
        <h2 class="wh-chart-title">Deliveries per {per}</h2>
        <ul class="wh-legend" aria-label="Legend">
          <li>
            <span class="wh-swatch wh-ok" aria-hidden="true" /> Succeeded ({ok})
          </li>
          <li>
            <span class="wh-swatch wh-failed" aria-hidden="true" /> Failed ({failed})
          </li>
        </ul>
      </figcaption>
      <div class="wh-svg-wrap">
        <svg viewBox={`0 0 ${W} ${H}`} width="100%" role="img" aria-label={summary} class="wh-svg">
          {ticks.map((t) => (
            <g key={`t${t}`}>
              <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} class="wh-grid" />
              <text x={M.left - 6} y={y(t) + 4} text-anchor="end" class="wh-axis wh-axis-y">
                {t}
              </text>
            </g>
          ))}
          {bins.map((b, i) => {
            const x = M.left + i * slot + (slot - barW) / 2
            return (
              <g key={b.start}>
                <title>{`${range(b.start, step)}: ${b.ok} succeeded, ${b.failed} failed`}</title>
                {b.ok > 0 ? (
                  <rect
                    class="wh-bar wh-ok"
                    x={x}
                    width={barW}
                    y={y(b.ok)}
                    height={y(0) - y(b.ok)}
                    data-count={b.ok}
                  />
                ) : null}
                {b.failed > 0 ? (
                  <rect
                    class="wh-bar wh-failed"
                    x={x}
                    width={barW}
                    y={y(b.ok + b.failed)}
                    height={y(b.ok) - y(b.ok + b.failed)}
                    data-count={b.failed}
                  />
                ) : null}
                {i % every === 0 ? (
                  <text
                    x={M.left + i * slot + slot / 2}
                    y={H - M.bottom + 16}
                    text-anchor="middle"
                    class={axisClass(i / every, i + every >= bins.length)}
                  >
                    {label(b.start, step)}
                  </text>
                ) : null}
              </g>
            )
          })}
          <line x1={M.left} x2={W - M.right} y1={y(0)} y2={y(0)} class="wh-baseline" />
        </svg>
      </div>
      <details class="wh-chart-table">
        <summary>The chart as a table</summary>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Deliveries per {per}</caption>
            <ColumnHeads
              columns={['Period', { label: 'Succeeded', num: true }, { label: 'Failed', num: true }]}
            />
            <tbody>
              {bins
                .filter((b) => b.ok + b.failed > 0)
                .map((b) => (
                  <tr key={b.start}>
                    <th scope="row">{range(b.start, step)}</th>
                    <td class="num">{b.ok}</td>
                    <td class="num">{b.failed}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  )
}
