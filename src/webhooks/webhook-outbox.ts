import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import { type Insertable, type Kysely, type Selectable, sql } from 'kysely'
import { parentOf } from '../api/paths.js'
import { dialectOf } from '../db/dialects/dialect-of.js'
import type { Database, WebhookNotificationsTable } from '../db/schema.js'
import { behaviorTargets } from './behavior-webhooks.js'
import { findWebhookSettings } from './listener-settings.js'
import type { WebhookOperation } from './webhook-operations.js'
import { nextSequences, orderKey } from './webhook-ordering.js'

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

const parentLower = (p: string) => parentOf(p).toLowerCase()

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
 * Writes the notifications of an Action into the outbox, in the Action's own transaction: one for
 * the site's listener when it is enabled and the operation is one of its triggers, and one per
 * URL of each webhook behavior that applies where the file is and wants the Action
 * (behavior-webhooks.ts), all in one statement. Returns how many were written.
 */
export async function enqueueNotification(
  db: Kysely<Database>,
  actor: Actor,
  actionId: number,
  a: ActionFacts,
  now: number,
  /** The site's settings when the caller read them already (a batch of Actions); else read here. */
  known?: {
    settings: Awaited<ReturnType<typeof findWebhookSettings>>
    /** The webhook behaviors read so far per folder, shared by the batch's Actions. */
    behaviors?: Parameters<typeof behaviorTargets>[6]
  },
): Promise<number> {
  const operation = webhookOperationOf(a)
  if (operation === null) return 0
  // A listener fetching the file its event linked to (a file-aware link) is delivery, not a
  // user's download: it stays in the history but notifies no one, or a listener that fetches
  // the file of each Download event would cause one more event per fetch, for ever.
  if (actor.interface === 'webhook') return 0
  const moved = a.action === 'move' || a.action === 'copy'
  const path = moved ? (a.destination ?? a.path) : a.path
  const folder = parentOf(path)
  const [settings, targets] = await Promise.all([
    known ? known.settings : findWebhookSettings(db, actor.siteId),
    behaviorTargets(db, actor.siteId, folder, a.action, operation, path, known?.behaviors),
  ])
  const site = settings?.enabled === true && !!settings.url && settings.triggers.includes(operation)
  if (!site && targets.length === 0) return 0
  const base = {
    site_id: actor.siteId,
    action_id: actionId,
    operation,
    user_id: actor.userId,
    username: actor.username ?? '',
    protocol: actor.interface ?? 'restapi',
    path,
    sourcepath: moved ? (a.source ?? '') : '',
    folder,
    state: 'pending' as const,
    // 0: as many as the retry schedule allows (a manual retry raises it).
    max_attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_until: null,
    created_at: now,
    updated_at: now,
  }
  const rows: Insertable<WebhookNotificationsTable>[] = []
  if (site) rows.push({ ...base, message_id: newMessageId(), behavior_id: null, url: null })
  for (const t of targets)
    rows.push({ ...base, message_id: newMessageId(), behavior_id: t.behaviorId, url: t.url })
  // Each endpoint orders its deliveries per path (webhook-ordering.ts): the key and its next number.
  for (const r of rows)
    r.order_key = orderKey(actor.siteId, r.url ? { behaviorId: r.behavior_id!, url: r.url } : null, path)
  const sequences = await nextSequences(
    db,
    rows.map((r) => r.order_key!),
    now,
  )
  for (const r of rows) r.sequence = sequences.get(r.order_key!)!
  await db.insertInto('webhook_notifications').values(rows).execute()
  await signalOutbox(db, actor.siteId)
  return rows.length
}

/**
 * A `Test` notification, sent once whatever the settings, written already claimed by `owner`: no
 * dispatcher's loop picks it up, unless that process dies before sending, and then it is
 * delivered once the claim runs out. A behavior's test (`test`) is sent with settings only its
 * caller holds: if that process dies, the test is dropped instead (no one waits for its answer).
 */
export function enqueueClaimedTest(
  db: Kysely<Database>,
  actor: Actor & { interface: string },
  owner: string,
  leaseUntil: number,
  now: number,
  /** A behavior's test: the URL it goes to and the operation it names (the settings are the caller's). */
  test?: { url: string; operation: string },
): Promise<Selectable<WebhookNotificationsTable>> {
  return db
    .insertInto('webhook_notifications')
    .values({
      site_id: actor.siteId,
      action_id: null,
      message_id: newMessageId(),
      operation: test?.operation ?? 'Test',
      user_id: actor.userId,
      username: actor.username ?? '',
      protocol: actor.interface,
      path: '',
      sourcepath: '',
      folder: '',
      state: 'pending',
      max_attempts: 1,
      forced: 1,
      next_attempt_at: now,
      lease_owner: owner,
      lease_until: leaseUntil,
      behavior_id: null,
      url: test?.url ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/**
 * Puts a notification back in the outbox, due now, sent whatever the settings, with room for at
 * least `allowed` attempts in all and one more than it has had. False when it was delivered
 * meanwhile (an attempt finishing since the caller looked): there is nothing to send again.
 */
export async function requeueNotification(
  db: Kysely<Database>,
  id: number,
  allowed: number,
  now: number,
): Promise<boolean> {
  const updated = await db
    .updateTable('webhook_notifications')
    .set({
      state: 'pending',
      forced: 1,
      max_attempts: sql<number>`case when attempts + 1 > ${allowed} then attempts + 1 else ${allowed} end`,
      next_attempt_at: now,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('state', '!=', 'delivered')
    .executeTakeFirst()
  return updated.numUpdatedRows !== 0n
}
