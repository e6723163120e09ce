import type { Kysely } from 'kysely'
import { parentOf } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { metrics } from '../../metrics/metrics.js'
import { findWebhookSettings } from '../../webhooks/listener-settings.js'
import { enqueueNotification } from '../../webhooks/webhook-outbox.js'
import { insertAction, insertActions } from './action-repository.js'

export const ACTION_TYPES = [
  'create',
  'read',
  'update',
  'destroy',
  'move',
  'login',
  'failedlogin',
  'copy',
  'user_create',
  'user_update',
  'user_destroy',
  'group_create',
  'group_update',
  'group_destroy',
  'permission_create',
  'permission_destroy',
  'api_key_create',
  'api_key_update',
  'api_key_destroy',
] as const
export type ActionType = (typeof ACTION_TYPES)[number]

export interface ActionTarget {
  type: string
  id?: number
  name?: string
}

export interface NewAction {
  action: ActionType
  display: string
  path?: string
  source?: string | null
  destination?: string | null
  failureType?: string | null
  targets?: ActionTarget[]
  /** Defaults to the principal's user. */
  userId?: number | null
  username?: string | null
}

export interface ActionContext {
  siteId: number
  userId: number | null
  username: string | null
  ip: string | null
  interface: string | null
}

export function contextOf(p: Principal): ActionContext {
  return {
    siteId: p.siteId,
    userId: p.user?.id ?? null,
    username: p.user?.username ?? null,
    ip: p.ip,
    interface: p.interface,
  }
}

/**
 * Writes one Action into the history table, and its webhook notification into the outbox when
 * the site's listener wants it. Call it with the transaction of the change it records, so that
 * neither the history nor a webhook ever tells of a change that did not happen (or misses one).
 */
export async function recordAction(
  db: Kysely<Database>,
  ctx: ActionContext,
  a: NewAction,
  now = Date.now(),
): Promise<number> {
  metrics.action(a.action, ctx.interface)
  const path = a.path ?? ''
  const id = await insertAction(db, actionRow(ctx, a, now))
  await enqueueNotification(db, ctx, id, { ...a, path }, now)
  return id
}

/**
 * The same for many Actions of one actor at once (a batch of deletions): one statement writes
 * them all, the listener's settings are read once, and each gets its notification as above.
 */
export async function recordActions(
  db: Kysely<Database>,
  ctx: ActionContext,
  list: NewAction[],
  now = Date.now(),
): Promise<void> {
  if (list.length === 0) return
  for (const a of list) metrics.action(a.action, ctx.interface)
  const ids = await insertActions(
    db,
    list.map((a) => actionRow(ctx, a, now)),
  )
  const known = { settings: await findWebhookSettings(db, ctx.siteId), behaviors: new Map() }
  for (const [i, a] of list.entries()) {
    await enqueueNotification(db, ctx, ids[i]!, { ...a, path: a.path ?? '' }, now, known)
  }
}

function actionRow(ctx: ActionContext, a: NewAction, now: number) {
  const path = a.path ?? ''
  const folder = parentOf(path)
  return {
    site_id: ctx.siteId,
    created_at: now,
    user_id: a.userId !== undefined ? a.userId : ctx.userId,
    username: a.username !== undefined ? a.username : ctx.username,
    action: a.action,
    path,
    folder,
    source: a.source ?? null,
    destination: a.destination ?? null,
    display: a.display,
    ip: ctx.ip,
    interface: ctx.interface,
    failure_type: a.failureType ?? null,
    targets: JSON.stringify(a.targets ?? []),
  }
}
