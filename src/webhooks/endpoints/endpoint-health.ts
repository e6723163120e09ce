import { type Kysely, sql } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../../db/schema.js'
import { queueMail, wakeMailWorkers } from '../../mail/mail-queue.js'
import type { WebhookOutcome } from '../webhook-outcome.js'
import type { WebhookRequest } from '../webhook-sender.js'
import { type EndpointRow, normalized } from './endpoint-rows.js'

/** Who hears of an endpoint disabled or enabled again, beside the server's log. */
export interface EndpointAlerts {
  /** Mail the site's admins (only when the server sends mail). */
  mail: boolean
  /** The domain of Message-IDs. */
  mailDomain?: string | undefined
  /** The operational webhook: a JSON POST for each change (WEBHOOK_ALERT_URL). */
  url?: string | undefined
  send?: ((req: WebhookRequest) => Promise<WebhookOutcome>) | undefined
  logger?: Logger | undefined
}

export type EndpointEvent = 'webhook_endpoint.disabled' | 'webhook_endpoint.enabled'

/** How long a success's time may lag in the endpoint's row: successes in a row are not each written. */
const SUCCESS_WRITE_MS = 1000

/**
 * Keeps each endpoint's health from the outcomes of its deliveries: failures in a row and since
 * when, the last success and failure. An endpoint failing continuously for `disableAfterMs`, or
 * answering `410 Gone`, is disabled: its notifications are then held, not sent, until it is
 * enabled again.
 */
export class EndpointHealth {
  /** When this process last wrote a success per endpoint. */
  private readonly successWritten = new Map<number, number>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly disableAfterMs: number,
    private readonly alerts: EndpointAlerts,
  ) {}

  /**
   * Notes an attempt's outcome; null when there is nothing to write (a success soon after the
   * last one written), so the usual delivery makes no promise for it.
   */
  note(e: EndpointRow, outcome: WebhookOutcome, now: number): Promise<void> | null {
    if (outcome.success) {
      const written = this.successWritten.get(e.id)
      if (
        e.consecutive_failures === 0 &&
        e.state !== 'failing' &&
        written !== undefined &&
        now - written < SUCCESS_WRITE_MS
      )
        return null
    }
    return this.write(e, outcome, now)
  }

  private async write(e: EndpointRow, outcome: WebhookOutcome, now: number): Promise<void> {
    if (outcome.success) {
      this.successWritten.set(e.id, now)
      await this.db
        .updateTable('webhook_endpoints')
        .set({
          consecutive_failures: 0,
          failing_since: null,
          last_success_at: now,
          state: sql`case when state = 'failing' then 'enabled' else state end`,
          updated_at: now,
        })
        .where('id', '=', e.id)
        .execute()
      return
    }
    this.successWritten.delete(e.id)
    const row = await this.db
      .updateTable('webhook_endpoints')
      .set({
        consecutive_failures: sql`consecutive_failures + 1`,
        failing_since: sql`coalesce(failing_since, ${now})`,
        last_failure_at: now,
        last_failure_reason: outcome.message,
        state: sql`case when state = 'enabled' then 'failing' else state end`,
        updated_at: now,
      })
      .where('id', '=', e.id)
      .returning(['failing_since', 'state'])
      .executeTakeFirst()
    if (!row || (row.state !== 'enabled' && row.state !== 'failing')) return
    const gone = !outcome.network && outcome.status === 410
    const since = Number(row.failing_since ?? now)
    if (!gone && now - since < this.disableAfterMs) return
    const reason = gone
      ? 'The listener answered 410 Gone'
      : `Failing continuously since ${new Date(since).toISOString()} (last: ${outcome.message})`
    const disabled = await this.db
      .updateTable('webhook_endpoints')
      .set({ state: 'disabled', disabled_at: now, disabled_reason: reason, updated_at: now })
      .where('id', '=', e.id)
      .where('state', 'in', ['enabled', 'failing'])
      .returningAll()
      .executeTakeFirst()
    if (disabled) await announce(this.db, 'webhook_endpoint.disabled', normalized(disabled), now, this.alerts)
  }
}

/**
 * Tells of an endpoint disabled or enabled again: the server's log, a mail to each site admin with
 * an address (when the server sends mail), and the operational webhook when one is set. A failure
 * to tell is logged, never raised: the change itself stands.
 */
export async function announce(
  db: Kysely<Database>,
  event: EndpointEvent,
  e: EndpointRow,
  now: number,
  alerts: EndpointAlerts,
): Promise<void> {
  const what = e.behavior_id === null ? 'the site listener' : `webhook behavior ${e.behavior_id}`
  const disabled = event === 'webhook_endpoint.disabled'
  const line = disabled
    ? `Webhook endpoint ${e.id} (${what}, ${e.url}) was disabled: ${e.disabled_reason ?? ''}. Its notifications are kept until it is enabled again.`
    : `Webhook endpoint ${e.id} (${what}, ${e.url}) was enabled again: its kept notifications are being delivered.`
  alerts.logger?.warn({ endpoint: e.id, site: e.site_id, event, reason: e.disabled_reason }, line)
  try {
    if (alerts.mail) {
      const admins = await db
        .selectFrom('users')
        .select(['id', 'email'])
        .where('site_id', '=', e.site_id)
        .where('site_admin', '=', 1)
        .where('disabled', '=', 0)
        .where('email', 'is not', null)
        .execute()
      const mails = admins
        .filter((a) => a.email)
        .map((a) => ({
          siteId: e.site_id,
          kind: event,
          to: a.email!,
          subject: disabled
            ? `Webhook endpoint disabled: ${e.url}`
            : `Webhook endpoint enabled again: ${e.url}`,
          text: `${line}\n`,
        }))
      if (mails.length > 0) {
        await queueMail(db, mails, now, alerts.mailDomain)
        wakeMailWorkers()
      }
    }
  } catch (err) {
    alerts.logger?.error({ err, endpoint: e.id }, 'webhook endpoint mail could not be queued')
  }
  if (alerts.url && alerts.send) {
    const body = JSON.stringify({
      event,
      at: new Date(now).toISOString(),
      endpoint: {
        id: e.id,
        behavior_id: e.behavior_id,
        url: e.url,
        state: e.state,
        disabled_reason: e.disabled_reason,
      },
    })
    const outcome = await alerts
      .send({
        url: alerts.url,
        headers: { 'Content-Type': 'application/json', 'User-Agent': 'Wharf-Webhook' },
        body,
      })
      .catch((err: unknown) => ({ success: false, message: String(err) }))
    if (!outcome.success)
      alerts.logger?.error({ endpoint: e.id, event, message: outcome.message }, 'operational webhook failed')
  }
}
