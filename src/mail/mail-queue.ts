import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../db/schema.js'

/**
 * In-process wake-up of the mail workers, sent once the transaction that queued a message has
 * committed. Other processes find the message by polling.
 */
export const mailSignal = new EventEmitter()
mailSignal.setMaxListeners(0)

/** One message to send. */
export interface NewMail {
  siteId: number
  /** What it is about (`bundle_share`, `bundle_upload`, …): for the log and the operator. */
  kind: string
  to: string
  subject: string
  /** Plain text, always sent; `html` is its alternative part when given. */
  text: string
  html?: string | undefined
  /** The user whose action queues it (null or absent: a site-wide key's, or none). */
  senderUserId?: number | null | undefined
}

/**
 * Queues messages in the caller's transaction, the one of the action that causes them: they are
 * sent if and only if it commits. Returns their ids. Call `wakeMailWorkers()` after the commit.
 */
export async function queueMail(
  db: Kysely<Database> | Transaction<Database>,
  mails: NewMail[],
  now: number,
  /** The domain of the Message-ID (MAIL_FROM's). */
  domain = 'wharf.invalid',
): Promise<number[]> {
  if (mails.length === 0) return []
  const rows = await db
    .insertInto('mail_outbox')
    .values(
      mails.map((m) => ({
        site_id: m.siteId,
        kind: m.kind,
        to_address: m.to,
        subject: m.subject,
        text_body: m.text,
        html_body: m.html ?? null,
        message_id: `<${crypto.randomUUID()}@${domain}>`,
        next_attempt_at: now,
        created_at: now,
        sender_user_id: m.senderUserId ?? null,
      })),
    )
    .returning('id')
    .execute()
  return rows.map((r) => r.id)
}

/** Wakes this process's mail workers; call it after the commit that queued mail. */
export function wakeMailWorkers(): void {
  mailSignal.emit('queued')
}
