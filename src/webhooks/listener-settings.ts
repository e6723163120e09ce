import type { Kysely, Selectable } from 'kysely'
import type { Database, WebhookSettingsTable } from '../db/schema.js'
import { WEBHOOK_OPERATIONS, type WebhookOperation } from './webhook-operations.js'

/**
 * A site's listener as delivery sees it: where notifications go, for which operations, and the
 * keys they are signed with. The settings are administered in modules/webhooks; delivery only
 * reads them, fresh, when it enqueues and when it sends.
 */
export interface WebhookSettings {
  siteId: number
  url: string | null
  triggers: WebhookOperation[]
  enabled: boolean
  verificationToken: string
  signingSecret: string
  updatedAt: number
}

const KNOWN = new Set<string>(WEBHOOK_OPERATIONS)

export const isWebhookOperation = (t: unknown): t is WebhookOperation => typeof t === 'string' && KNOWN.has(t)

export function settingsFromRow(row: Selectable<WebhookSettingsTable>): WebhookSettings {
  // A trigger the code no longer knows (an edited row) notifies nothing, so it is not shown either.
  const triggers = (JSON.parse(row.triggers) as unknown[]).filter(isWebhookOperation)
  return {
    siteId: row.site_id,
    url: row.url,
    triggers,
    enabled: row.enabled === 1,
    verificationToken: row.verification_token,
    signingSecret: row.signing_secret,
    updatedAt: row.updated_at,
  }
}

/** The settings if a row exists, else undefined; never writes (used inside other transactions on every file action). */
export async function findWebhookSettings(
  db: Kysely<Database>,
  siteId: number,
): Promise<WebhookSettings | undefined> {
  const row = await db
    .selectFrom('webhook_settings')
    .selectAll()
    .where('site_id', '=', siteId)
    .executeTakeFirst()
  return row ? settingsFromRow(row) : undefined
}
