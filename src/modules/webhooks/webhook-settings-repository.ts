import type { Kysely } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'
import {
  findWebhookSettings,
  settingsFromRow,
  type WebhookSettings,
} from '../../webhooks/listener-settings.js'

/** What a site's settings start as: no listener, nothing triggered, and fresh secrets. */
export interface WebhookSettingsDefaults {
  verificationToken: string
  signingSecret: string
}

/** The webhook_settings table: one row per site, read by delivery and written here. */
export class WebhookSettingsRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new WebhookSettingsRepository(db, this.dialect) as this
  }

  /** The site's settings if its row exists (delivery's own reader, so both read one shape). */
  find(siteId: number): Promise<WebhookSettings | undefined> {
    return findWebhookSettings(this.db, siteId)
  }

  /**
   * The site's row, which must exist. With `lock`, held until the transaction ends where the
   * dialect has row locks (SQLite runs one write transaction at a time).
   */
  async get(siteId: number, lock = false): Promise<WebhookSettings> {
    let q = this.db.selectFrom('webhook_settings').selectAll().where('site_id', '=', siteId)
    if (lock && this.dialect.rowLocks) q = q.forUpdate()
    return settingsFromRow(await q.executeTakeFirstOrThrow())
  }

  /** Creates the site's row unless another request already has (insert … on conflict do nothing). */
  async insertDefaults(siteId: number, defaults: WebhookSettingsDefaults, now: number): Promise<void> {
    await this.db
      .insertInto('webhook_settings')
      .values({
        site_id: siteId,
        url: null,
        triggers: '[]',
        enabled: 0,
        verification_token: defaults.verificationToken,
        signing_secret: defaults.signingSecret,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('site_id').doNothing())
      .execute()
  }

  async update(
    siteId: number,
    next: Pick<WebhookSettings, 'url' | 'triggers' | 'enabled'>,
    now: number,
  ): Promise<void> {
    await this.db
      .updateTable('webhook_settings')
      .set({
        url: next.url,
        triggers: JSON.stringify(next.triggers),
        enabled: next.enabled ? 1 : 0,
        updated_at: now,
      })
      .where('site_id', '=', siteId)
      .execute()
  }
}
