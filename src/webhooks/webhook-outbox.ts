import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import { type Kysely, sql } from 'kysely'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database } from '../db/schema.js'
import { findWebhookSettings } from './listener-settings.js'
import type { WebhookOperation } from './webhook-operations.js'

/** What the outbox needs to know of an Action (a subset of recordAction's input). */
export interface ActionFacts {
  action: string
  path: string
  source?: string | null | undefined
  destination?: string | null | undefined
  targets?: { type: string }[] | undefined
}

export interface Actor {
  siteId: number
  userId: number | null
  username: string | null
  interface: string | null
}

/**
 * In-process wake-up of the dispatcher. On SQLite a listener's first query waits for the
 * connection the enqueuing transaction holds, so it sees the committed row; on PostgreSQL the
 * transaction sends a NOTIFY instead, which the database delivers only once it commits.
 */
export const outboxSignal = new EventEmitter()
outboxSignal.setMaxListeners(0)

const parentLower = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '').toLowerCase()
export const folderOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '')

/**
 * The webhook operation an Action stands for, or null when none: only file and folder actions
 * notify. A move that keeps the parent folder is a Rename.
 */
export function webhookOperationOf(a: ActionFacts): WebhookOperation | null {
  const kind = a.targets?.[0]?.type
  if (kind !== 'file' && kind !== 'folder') return null
  switch (a.action) {
    case 'create':
      return kind === 'folder' ? 'Create Folder' : 'Upload'
    case 'update':
      return kind === 'file' ? 'Upload' : null
    case 'read':
      return 'Download'
    case 'destroy':
      return 'Delete'
    case 'copy':
      return 'Copy'
    case 'move':
      return parentLower(a.source ?? '') === parentLower(a.destination ?? a.path) ? 'Rename' : 'Move'
    default:
      return null
  }
}

/** A `webhook-id`: unique, the same on every attempt of one notification. */
export const newMessageId = () => `msg_${crypto.randomBytes(16).toString('base64url')}`

/** The NOTIFY channel of the database schema in use (test runs share one database). */
export const channelSql = sql<string>`'wharf_webhooks_' || current_schema()`

/** Tells the dispatchers a notification is due: NOTIFY on PostgreSQL (sent at commit), else in-process. */
export async function signalOutbox(db: Kysely<Database>, siteId: number): Promise<void> {
  if (dialectOf(db).notify) await sql`select pg_notify(${channelSql}, '')`.execute(db)
  else outboxSignal.emit('enqueued', siteId)
}

/**
 * Writes the notification of an Action into the outbox, in the Action's own transaction, when
 * the site's listener is enabled and the operation is one of its triggers. Returns its id.
 */
export async function enqueueNotification(
  db: Kysely<Database>,
  actor: Actor,
  actionId: number,
  a: ActionFacts,
  now: number,
): Promise<number | null> {
  const operation = webhookOperationOf(a)
  if (operation === null) return null
  const settings = await findWebhookSettings(db, actor.siteId)
  if (!settings?.enabled || !settings.url || !settings.triggers.includes(operation)) return null
  const moved = a.action === 'move' || a.action === 'copy'
  const path = moved ? (a.destination ?? a.path) : a.path
  const row = await db
    .insertInto('webhook_notifications')
    .values({
      site_id: actor.siteId,
      action_id: actionId,
      message_id: newMessageId(),
      operation,
      user_id: actor.userId,
      username: actor.username ?? '',
      protocol: actor.interface ?? 'restapi',
      path,
      sourcepath: moved ? (a.source ?? '') : '',
      folder: folderOf(path),
      state: 'pending',
      // 0: as many as the retry schedule allows (a manual retry raises it).
      max_attempts: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  await signalOutbox(db, actor.siteId)
  return row.id
}
