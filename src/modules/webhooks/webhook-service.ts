import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import type { Database } from '../../db/schema.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { WebhookTestRequest } from '../../webhooks/behavior-webhooks.js'
import { deliveringAttempts } from '../../webhooks/delivering-attempts.js'
import { type DeliveryLog, failedAttempt } from '../../webhooks/delivery-log.js'
import type { RetryPolicy } from '../../webhooks/retry-policy.js'
import type { WebhookDispatcher } from '../../webhooks/webhook-dispatcher.js'
import { enqueueClaimedTest, requeueNotification, signalOutbox } from '../../webhooks/webhook-outbox.js'
import type { WebhookSettingsService } from './webhook-settings.js'

/** What `POST /webhook_settings/test` answers: the attempt as the log records it. */
export interface WebhookTestResult {
  id: number
  success: boolean
  status: number
  message: string
  request_url: string
  response_size: number
  response_body: string
  duration_ms: number
}

/** The operations on the delivery machinery that callers ask for: a test send and a retry. */
export class WebhookService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: WebhookSettingsService,
    private readonly dispatcher: WebhookDispatcher,
    private readonly policy: RetryPolicy,
    private readonly leaseMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * `POST /action_webhook_failures/{id}/retry`: the notification of a failed attempt goes out
   * again now, to the listener configured now, as attempt n+1. A notification whose retries are
   * used up gets exactly that one more attempt; one still being retried keeps its schedule.
   */
  async retryFailure(p: Principal, id: number): Promise<void> {
    requireSiteAdmin(p)
    const failed = await failedAttempt(this.db, p.siteId, id)
    if (!failed) throw ERRORS.notFound(`No failed webhook request has id ${id}`)
    if (failed.state === 'delivered') throw await this.alreadyDelivered(p.siteId, id)
    // A behavior's test was sent with settings only its request had: there is nothing to resend with.
    if (failed.url !== null && failed.behavior_id === null) {
      throw ApiError.modelSave({
        id: [`${id} is a webhook behavior test: its settings were not stored, so it cannot be sent again`],
      })
    }
    const now = this.now()
    const allowed = Math.max(this.policy.maxAttempts(failed.max_attempts), failed.attempts + 1)
    await this.db.transaction().execute(async (trx) => {
      if (!(await requeueNotification(trx, failed.id, allowed, now))) {
        throw await this.alreadyDelivered(p.siteId, id, trx)
      }
      await signalOutbox(trx, p.siteId)
    })
  }

  /**
   * A failed attempt whose notification a later attempt delivered is not sent again: the listener
   * has it, and sending it twice on request is never what the asker meant (docs/decisions.md).
   */
  private async alreadyDelivered(siteId: number, id: number, db = this.db): Promise<ApiError> {
    // The same look-up as the webhook-log results' `delivered_by_id`, so both name one record.
    const delivered = (await deliveringAttempts(db, siteId, [id])).get(id)
    const by = delivered ? `log record ${delivered.id}` : 'a later attempt'
    return ApiError.modelSave({
      id: [
        `${id} is a failed attempt of a notification that ${by} has since delivered: it is not sent again`,
      ],
    })
  }

  /**
   * `POST /webhook_settings/test`: a notification with operation `Test` sent now to the saved
   * listener, whether or not webhooks are enabled, once (no retries), and logged like any other.
   */
  async sendTest(p: Principal): Promise<WebhookTestResult> {
    requireSiteAdmin(p)
    const settings = await this.settings.load(p.siteId)
    if (!settings.url) {
      throw ERRORS.requestParamsRequired('Save a listener url in the webhook settings before sending a test')
    }
    const row = await this.claimTest(p)
    const log = await this.dispatcher.deliverClaimed(row)
    if (!log) throw ERRORS.requestParamsRequired('The listener url was removed meanwhile')
    return testResult(log, settings.url)
  }

  /**
   * `POST /behaviors/webhook/test`: one request with the given settings (checked, and the caller
   * allowed, by the behaviors' service), sent now, once, and logged (with no behavior id: it is
   * no stored behavior's).
   */
  async sendBehaviorTest(p: Principal, test: WebhookTestRequest): Promise<WebhookTestResult> {
    const row = await this.claimTest(p, { url: test.url, operation: test.operation })
    const log = await this.dispatcher.deliverClaimed(row, test.sending)
    if (!log) throw ERRORS.requestParamsRequired('The test request could not be sent')
    return testResult(log, test.url)
  }

  /** A test notification written already claimed by this process's dispatcher, to send now. */
  private claimTest(p: Principal, test?: { url: string; operation: string }) {
    const now = this.now()
    return enqueueClaimedTest(
      this.db,
      {
        siteId: p.siteId,
        userId: p.user?.id ?? null,
        username: p.user?.username ?? null,
        interface: p.interface,
      },
      this.dispatcher.owner,
      now + this.leaseMs,
      now,
      test,
    )
  }
}

function testResult(log: DeliveryLog, url: string): WebhookTestResult {
  const o = log.outcome
  return {
    id: log.id,
    success: o.success,
    status: o.status,
    message: o.message,
    request_url: url,
    response_size: o.responseSize,
    response_body: o.responseBody,
    duration_ms: Math.round(o.durationMs),
  }
}
