import { afterAll, beforeAll } from 'vitest'
import type { DialectName } from './server.js'
import { type ProcessSite, processSite, type ServerProcesses, serverProcesses } from './server-process.js'
import { startWebhookRecorder, type WebhookRecorder } from './webhook-recorder.js'

/** Deliveries in flight at once in the crash tests' servers. */
export const IN_FLIGHT = 4

/** A poll's options for something that takes up to `ms` after a restart. */
export const pollWithin = (ms = 20_000) => ({ timeout: ms + 1_000, interval: 50 })

/**
 * Wharf as `npm start` runs it, for the tests that kill it with SIGKILL in the middle of
 * webhook delivery: a site whose retries come fast and whose listeners are on loopback, and
 * recorders as listeners; every process, recorder and site goes after the file's tests.
 */
export function webhookCrashServers() {
  let servers: ServerProcesses
  const sites: ProcessSite[] = []
  const recorders: WebhookRecorder[] = []
  beforeAll(async () => {
    servers = serverProcesses()
  }, 120_000)
  afterAll(async () => {
    await servers?.killAll()
    for (const r of recorders) await r.close()
    for (const s of sites) await s.remove()
  })
  return {
    get servers() {
      return servers
    },
    /** A site on `dialect` with the crash tests' settings, and `extra` ones. */
    async site(dialect: DialectName, extra: Record<string, string> = {}): Promise<ProcessSite> {
      const site = await processSite(servers, dialect, {
        RATE_LIMIT_PER_SECOND: '100000',
        RATE_LIMIT_BURST: '100000',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_RETRY_SCHEDULE: Array(20).fill('0.2').join(','),
        WEBHOOK_CONNECT_TIMEOUT_MS: '500',
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_CONCURRENCY: String(IN_FLIGHT),
        ...extra,
      })
      sites.push(site)
      return site
    },
    /** A listener closed after the file's tests. */
    async recorder(...args: Parameters<typeof startWebhookRecorder>): Promise<WebhookRecorder> {
      const rec = await startWebhookRecorder(...args)
      recorders.push(rec)
      return rec
    },
  }
}
