import type { Registry } from 'prom-client'

type PromClient = typeof import('prom-client')

/**
 * Values read when Prometheus scrapes (queue depths, open sessions, the database pool): each
 * running part of the process adds a source and removes it when it stops. Several servers in one
 * process (tests) add up.
 */
type Source<T> = () => T | Promise<T>

class Sources<T> {
  private readonly all = new Set<Source<T>>()
  add(source: Source<T>): () => void {
    this.all.add(source)
    return () => {
      this.all.delete(source)
    }
  }
  async read(): Promise<T[]> {
    const values = await Promise.allSettled([...this.all].map((s) => s()))
    return values.flatMap((v) => (v.status === 'fulfilled' ? [v.value] : []))
  }
}

export interface OutboxState {
  /** Rows waiting to be sent. */
  depth: number
  /** Epoch ms of the oldest waiting row, or null. */
  oldest: number | null
}

export interface PoolState {
  total: number
  idle: number
  waiting: number
}

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

type Labels<L extends string> = Partial<Record<L, string | number>>

/** A counter as the code counts with it; a no-op until metrics are served. */
export interface CountBy<L extends string> {
  inc(labels: Labels<L>, value?: number): void
}

/** A histogram as the code observes with it; a no-op until metrics are served. */
export interface ObserveBy<L extends string> {
  observe(labels: Labels<L>, value: number): void
}

const UNCOUNTED = { inc() {}, observe() {} }

/**
 * Wharf's Prometheus metrics (names: `wharf_…_total` counters, `_seconds` and `_bytes` units), and
 * Node's own (event loop lag, heap, GC, CPU). One registry per process; exposed on a listener of
 * its own when METRICS_ENABLED is set (docs/operations.md, "Metrics").
 *
 * Nothing is counted, and prom-client is not loaded, until the metrics listener turns them on
 * (`serve`): a process that does not expose them neither holds the library nor pays for a count
 * on every request. The listener starts before the HTTP server takes its first request.
 */
export class Metrics {
  /** Whether metrics are counted (the listener has turned them on). */
  on = false
  private prom: PromClient | null = null
  private reg: Registry | null = null

  httpRequests: CountBy<'method' | 'route' | 'status'> = UNCOUNTED
  httpDuration: ObserveBy<'method' | 'route'> = UNCOUNTED
  actions: CountBy<'action' | 'interface'> = UNCOUNTED
  logins: CountBy<'interface' | 'result'> = UNCOUNTED
  transferBytes: CountBy<'interface' | 'direction'> = UNCOUNTED
  transfers: CountBy<'interface' | 'direction'> = UNCOUNTED
  webhookDeliveries: CountBy<'endpoint' | 'result'> = UNCOUNTED
  exportBuilds: CountBy<'kind' | 'result'> = UNCOUNTED
  jobLooks: CountBy<'worker' | 'result'> = UNCOUNTED

  /** One delivery attempt's result, for `wharf_webhook_deliveries_total` (no labels object while off). */
  webhookDelivered(endpoint: 'site' | 'behavior', success: boolean): void {
    if (this.on) this.webhookDeliveries.inc({ endpoint, result: success ? 'success' : 'failure' })
  }

  /** Open SFTP, FTP and WebDAV connections, by interface. */
  readonly sessionSources = new Sources<{ interface: string; open: number }>()
  /** The webhook outbox, per endpoint. */
  readonly webhookQueueSources = new Sources<(OutboxState & { endpoint: string })[]>()
  readonly mailQueueSources = new Sources<OutboxState>()
  readonly poolSources = new Sources<PoolState>()

  /** The registry the listener serves; only once metrics are on. */
  get registry(): Registry {
    if (!this.reg) throw new Error('metrics are not turned on')
    return this.reg
  }

  /**
   * Turns counting on with the prom-client module (loaded by the metrics listener), with Node's
   * own metrics (event loop lag, heap, GC), whose collectors cost a little all the time.
   */
  turnOn(prom: PromClient): void {
    if (this.on) return
    this.prom = prom
    const { Counter, Histogram } = prom
    const registry = new prom.Registry()
    this.reg = registry
    this.httpRequests = new Counter({
      name: 'wharf_http_requests_total',
      help: 'HTTP requests answered, by route (the pattern, not the path) and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    })
    this.httpDuration = new Histogram({
      name: 'wharf_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route',
      labelNames: ['method', 'route'] as const,
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    })
    this.actions = new Counter({
      name: 'wharf_actions_total',
      help: 'Actions recorded in the history, by action and interface',
      labelNames: ['action', 'interface'] as const,
      registers: [registry],
    })
    this.logins = new Counter({
      name: 'wharf_logins_total',
      help: 'Logins by interface and result (success, failure)',
      labelNames: ['interface', 'result'] as const,
      registers: [registry],
    })
    this.transferBytes = new Counter({
      name: 'wharf_transfer_bytes_total',
      help: "Bytes of files' contents moved, by interface and direction (up: stored, down: served)",
      labelNames: ['interface', 'direction'] as const,
      registers: [registry],
    })
    this.transfers = new Counter({
      name: 'wharf_transfers_total',
      help: 'Uploads committed and downloads served to their end, by interface and direction',
      labelNames: ['interface', 'direction'] as const,
      registers: [registry],
    })
    this.webhookDeliveries = new Counter({
      name: 'wharf_webhook_deliveries_total',
      help: 'Webhook delivery attempts by endpoint and result (delivered, retry, failed)',
      labelNames: ['endpoint', 'result'] as const,
      registers: [registry],
    })
    this.exportBuilds = new Counter({
      name: 'wharf_export_builds_total',
      help: 'Export builds finished, by kind and result (ready, failed)',
      labelNames: ['kind', 'result'] as const,
      registers: [registry],
    })
    this.jobLooks = new Counter({
      name: 'wharf_background_job_runs_total',
      help: "Background workers' looks for work, by worker and result (ok, failed)",
      labelNames: ['worker', 'result'] as const,
      registers: [registry],
    })
    this.gauges(registry)
    prom.collectDefaultMetrics({ register: registry })
    this.on = true
  }

  private gauges(registry: Registry): void {
    const { Gauge } = this.prom!
    const sessions = this.sessionSources
    new Gauge({
      name: 'wharf_sessions_open',
      help: 'SFTP, FTP and WebDAV connections open now, by interface (WebDAV: connections that carried a signed-in request)',
      labelNames: ['interface'] as const,
      registers: [registry],
      async collect() {
        this.reset()
        for (const s of await sessions.read()) this.inc({ interface: s.interface }, s.open)
      },
    })
    const hooks = this.webhookQueueSources
    const outboxGauges = (
      name: string,
      what: string,
      read: () => Promise<(OutboxState & { endpoint?: string })[]>,
    ) => {
      const labelNames = name === 'webhook' ? (['endpoint'] as const) : ([] as const)
      new Gauge({
        name: `wharf_${name}_queue_depth`,
        help: `${what} waiting to be sent`,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset()
          for (const s of await read()) this.inc(s.endpoint ? { endpoint: s.endpoint } : {}, s.depth)
        },
      })
      new Gauge({
        name: `wharf_${name}_queue_oldest_age_seconds`,
        help: `Age of the oldest of the ${what.toLowerCase()} waiting to be sent (0 when none waits)`,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset()
          const now = Date.now()
          const oldest = new Map<string, number>()
          for (const s of await read()) {
            const key = s.endpoint ?? ''
            const age = s.oldest === null ? 0 : Math.max(0, (now - s.oldest) / 1000)
            oldest.set(key, Math.max(oldest.get(key) ?? 0, age))
          }
          for (const [endpoint, age] of oldest) this.set(endpoint ? { endpoint } : {}, age)
        },
      })
    }
    outboxGauges('webhook', 'Webhook notifications', async () => (await hooks.read()).flat())
    const mail = this.mailQueueSources
    outboxGauges('mail', 'Mail messages', () => mail.read())
    const pools = this.poolSources
    for (const [key, help] of [
      ['total', 'Connections the PostgreSQL pool holds'],
      ['idle', 'Idle connections in the PostgreSQL pool'],
      ['waiting', 'Queries waiting for a connection of the PostgreSQL pool'],
    ] as const) {
      new Gauge({
        name: `wharf_db_pool_${key === 'total' ? 'connections' : key === 'idle' ? 'idle_connections' : 'waiting_queries'}`,
        help,
        registers: [registry],
        async collect() {
          this.reset()
          for (const p of await pools.read()) this.inc(p[key])
        },
      })
    }
  }

  /** A login or failed login recorded in the history. */
  action(action: string, iface: string | null): void {
    if (!this.on) return
    const label = iface ?? 'none'
    this.actions.inc({ action, interface: label })
    if (action === 'login') this.logins.inc({ interface: label, result: 'success' })
    else if (action === 'failedlogin') this.logins.inc({ interface: label, result: 'failure' })
  }

  transferred(iface: string | null, direction: 'up' | 'down', bytes: number, ended: boolean): void {
    if (!this.on) return
    const label = iface ?? 'none'
    if (bytes > 0) this.transferBytes.inc({ interface: label, direction }, bytes)
    if (ended) this.transfers.inc({ interface: label, direction })
  }
}

/** The process's metrics: counted once the metrics listener has turned them on. */
export const metrics = new Metrics()
