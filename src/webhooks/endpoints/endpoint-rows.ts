import { type Kysely, type Selectable, type SqlBool, sql } from 'kysely'
import type { Database, WebhookEndpointsTable } from '../../db/schema.js'
import { behaviorWebhookOf } from '../behavior-webhooks.js'

/**
 * Webhook endpoints: the site's listener and each URL of each webhook behavior, as rows of
 * `webhook_endpoints`, kept in step with the behaviors and the listener settings they come from.
 */

export type EndpointRow = Selectable<WebhookEndpointsTable>

/** The key of an endpoint within its site: `site`, or the behavior's id and one of its URLs. */
export function endpointKey(behaviorId: number | null, url: string | null): string | null {
  if (behaviorId === null) return url === null ? 'site' : null
  return url === null ? null : `${behaviorId} ${url}`
}

/** A notification's endpoint key (a behavior's test, which no behavior stores, has none). */
export const keyOfNotification = (n: { behavior_id: number | null; url: string | null }) =>
  endpointKey(n.behavior_id === null ? null : Number(n.behavior_id), n.url)

/**
 * Brings the site's endpoints in step: one for the listener while it has a URL, one per URL of
 * each webhook behavior. An endpoint whose URL is gone is deleted; the listener's endpoint keeps
 * its row (and its settings) when its URL changes, with its health started afresh.
 */
export async function syncEndpoints(db: Kysely<Database>, siteId: number, now: number): Promise<void> {
  const [settings, behaviors, have] = await Promise.all([
    db.selectFrom('webhook_settings').select('url').where('site_id', '=', siteId).executeTakeFirst(),
    db
      .selectFrom('behaviors')
      .select(['id', 'value'])
      .where('site_id', '=', siteId)
      .where('behavior', '=', 'webhook')
      .execute(),
    db.selectFrom('webhook_endpoints').selectAll().where('site_id', '=', siteId).execute(),
  ])
  const wanted = new Map<string, { behaviorId: number | null; url: string }>()
  if (settings?.url) wanted.set('site', { behaviorId: null, url: settings.url })
  for (const b of behaviors) {
    const id = Number(b.id)
    for (const url of behaviorWebhookOf(id, b.value).urls)
      wanted.set(endpointKey(id, url)!, { behaviorId: id, url })
  }
  const existing = new Map(have.map((e) => [e.endpoint_key, e]))
  const gone = have.filter((e) => !wanted.has(e.endpoint_key)).map((e) => Number(e.id))
  if (gone.length > 0) await db.deleteFrom('webhook_endpoints').where('id', 'in', gone).execute()
  const site = existing.get('site')
  const siteUrl = wanted.get('site')?.url
  if (site && siteUrl !== undefined && site.url !== siteUrl) {
    await db
      .updateTable('webhook_endpoints')
      .set({ ...freshHealth, url: siteUrl, updated_at: now })
      .where('id', '=', site.id)
      .execute()
  }
  const added = [...wanted].filter(([key]) => !existing.has(key))
  if (added.length === 0) return
  await db
    .insertInto('webhook_endpoints')
    .values(
      added.map(([key, e]) => ({
        site_id: siteId,
        endpoint_key: key,
        behavior_id: e.behaviorId,
        url: e.url,
        state: 'enabled' as const,
        consecutive_failures: 0,
        file_aware: 0,
        created_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) => oc.columns(['site_id', 'endpoint_key']).doNothing())
    .execute()
}

/** The health of an endpoint that has not been tried yet (a new URL). */
const freshHealth = {
  state: 'enabled' as const,
  consecutive_failures: 0,
  failing_since: null,
  last_success_at: null,
  last_failure_at: null,
  last_failure_reason: null,
  disabled_at: null,
  disabled_reason: null,
}

/**
 * The endpoints of some sites by site and key, in one statement: those with one of `keys` when
 * given (a batch of notifications needs its own endpoints, not every behavior's of the site).
 */
export async function endpointsOf(
  db: Kysely<Database>,
  siteIds: readonly number[],
  keys?: readonly string[],
): Promise<Map<string, EndpointRow>> {
  const out = new Map<string, EndpointRow>()
  if (siteIds.length === 0 || keys?.length === 0) return out
  let q = db.selectFrom('webhook_endpoints').selectAll().where('site_id', 'in', siteIds)
  if (keys !== undefined) q = q.where('endpoint_key', 'in', keys)
  const rows = await q.execute()
  for (const r of rows) out.set(`${r.site_id}:${r.endpoint_key}`, normalized(r))
  return out
}

/** Numbers as numbers whatever the driver gives for bigint. */
export function normalized(r: EndpointRow): EndpointRow {
  return {
    ...r,
    id: Number(r.id),
    site_id: Number(r.site_id),
    behavior_id: r.behavior_id === null ? null : Number(r.behavior_id),
    failing_since: num(r.failing_since),
    last_success_at: num(r.last_success_at),
    last_failure_at: num(r.last_failure_at),
    disabled_at: num(r.disabled_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  }
}
const num = (v: number | null) => (v === null ? null : Number(v))

/** The notifications of one endpoint (a where-condition on `webhook_notifications`, aliased or not). */
export function ofEndpoint(e: Pick<EndpointRow, 'site_id' | 'behavior_id' | 'url'>, alias = '') {
  const c = (name: string) => sql.ref(alias ? `${alias}.${name}` : name)
  if (e.behavior_id === null)
    return sql<SqlBool>`${c('site_id')} = ${e.site_id} and ${c('behavior_id')} is null and ${c('url')} is null`
  return sql<SqlBool>`${c('site_id')} = ${e.site_id} and ${c('behavior_id')} = ${e.behavior_id} and ${c('url')} = ${e.url}`
}
