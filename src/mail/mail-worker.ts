import { createRequire } from 'node:module'
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Transporter } from 'nodemailer'
import type { Logger } from 'pino'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database } from '../db/schema.js'
import { type ClaimShape, LeasedJobs } from '../jobs/leased-jobs.js'
import { LeasedWorker } from '../jobs/leased-worker.js'
import { mailSignal } from './mail-queue.js'

export interface MailWorkerOptions {
  /** The operator's SMTP server: `smtp://user:pass@host:587` or `smtps://…` (nodemailer's URL form). */
  smtpUrl: string
  /** The From header: `Wharf <wharf@example.com>` or an address. */
  from: string
  /** Messages handed to the server at once by this process. */
  concurrency: number
  /** How long a claim lasts unless renewed. */
  leaseMs: number
  /** Longest wait between looks for mail (queued by other processes, or due again). */
  pollMs: number
  /** Seconds before retry 1, 2, …; a message gets one attempt more than the schedule has entries. */
  retrySchedule: number[]
  /** SQLite: one process owns the file, so claims left by a crash are void at start. */
  releaseClaimsOnStart?: boolean | undefined
  logger?: Logger | undefined
  now?: () => number
}

interface MailRow {
  id: number
  to_address: string
  subject: string
  text_body: string
  html_body: string | null
  message_id: string
  attempts: number
}

/** nodemailer (~3 MiB of memory), loaded by the first worker: a server without SMTP never needs it. */
const loadNodemailer = () =>
  createRequire(import.meta.url)('nodemailer') as { createTransport: (url: string) => Transporter }

/** The oldest due messages first; each claim counts as an attempt. */
const CLAIM: ClaimShape = {
  key: 'mail',
  due: (p) => sql`state = 'queued' and next_attempt_at <= ${p('now')}`,
  orderBy: 'next_attempt_at, id',
  set: () => sql`attempts = attempts + 1`,
  returning: ['id', 'to_address', 'subject', 'text_body', 'html_body', 'message_id', 'attempts'],
}

/** Longest a server's error is kept in `last_error`. */
const ERROR_CHARS = 500

/**
 * Sends the mail outbox (mail-queue.ts) through the operator's SMTP server. A worker claims due
 * messages with a lease, so several processes never send the same one at once; a message the
 * server accepted is marked `sent`. A refusal the server says is permanent (a 5xx reply), or a
 * failure on the last attempt, marks it `failed`; any other failure (the server unreachable, a
 * 4xx reply) is tried again on the retry schedule. A process that dies mid-send leaves its claim
 * to run out, and the message is sent again with the same Message-ID: at least once, never
 * twice on purpose. Bodies and addresses never reach the log; the message's id does.
 */
export class MailWorker extends LeasedWorker<MailRow> {
  private readonly jobs: LeasedJobs<'mail_outbox'>
  private readonly transport: Transporter
  private readonly now: () => number

  constructor(
    db: Kysely<Database>,
    private readonly opts: MailWorkerOptions,
  ) {
    super(opts, { emitter: mailSignal, event: 'queued' }, 'mail worker')
    this.now = opts.now ?? Date.now
    this.jobs = new LeasedJobs(db, dialectOf(db), 'mail_outbox', { leaseMs: opts.leaseMs, now: this.now })
    this.transport = loadNodemailer().createTransport(opts.smtpUrl)
  }

  override async stop(): Promise<void> {
    await super.stop()
    this.transport.close()
  }

  protected override claim(free: number): Promise<MailRow[]> {
    return this.jobs.claim<MailRow>(CLAIM, free)
  }

  protected override async releaseLeftOver(): Promise<void> {
    await this.jobs.releaseLeftOver(sql`state = 'queued'`)
  }

  protected override failed(err: unknown, row: MailRow): void {
    this.opts.logger?.error({ err, mail: row.id }, 'a message could not be recorded as sent or failed')
  }

  protected override async renew(row: MailRow): Promise<void> {
    try {
      await this.jobs.renew(row.id)
    } catch (err) {
      this.opts.logger?.warn({ err, mail: row.id }, 'mail lease could not be renewed')
    }
  }

  protected override async run(row: MailRow): Promise<void> {
    try {
      await this.transport.sendMail({
        from: this.opts.from,
        to: row.to_address,
        subject: row.subject,
        text: row.text_body,
        ...(row.html_body !== null ? { html: row.html_body } : {}),
        messageId: row.message_id,
      })
    } catch (err) {
      await this.failedAttempt(row, err)
      return
    }
    await this.jobs.release(row.id, { state: 'sent', sent_at: this.now(), last_error: null })
  }

  private async failedAttempt(row: MailRow, err: unknown): Promise<void> {
    const code = (err as { responseCode?: unknown }).responseCode
    const permanent = typeof code === 'number' && code >= 500
    const last = row.attempts > this.opts.retrySchedule.length
    const reason = describe(err)
    if (permanent || last) {
      this.opts.logger?.error(
        { mail: row.id, attempts: row.attempts, reason },
        'a message could not be sent and was given up',
      )
      await this.jobs.release(row.id, { state: 'failed', last_error: reason })
      return
    }
    const delayMs = (this.opts.retrySchedule[row.attempts - 1] ?? 0) * 1000
    this.opts.logger?.warn(
      { mail: row.id, attempts: row.attempts, reason },
      'a message could not be sent; it will be tried again',
    )
    await this.jobs.release(row.id, { next_attempt_at: this.now() + delayMs, last_error: reason })
  }
}

/** The server's reply or the connection's failure, without the message's content. */
function describe(err: unknown): string {
  const e = err as { response?: unknown; code?: unknown; message?: unknown }
  const text =
    typeof e.response === 'string'
      ? e.response
      : `${typeof e.code === 'string' ? `${e.code}: ` : ''}${String(e.message ?? err)}`
  return text.slice(0, ERROR_CHARS)
}
