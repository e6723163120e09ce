import type { Insertable, Kysely, Selectable, Updateable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { BundleNotificationsTable, BundleRecipientsTable, Database } from '../../db/schema.js'

export type BundleRecipientRow = Selectable<BundleRecipientsTable>
export type BundleNotificationRow = Selectable<BundleNotificationsTable>

/** The people a bundle is shared with by e-mail, the users told of its use, and the mail they cause. */
export class BundleMailRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new BundleMailRepository(db, this.dialect) as this
  }

  recipientPage(bundleId: number, list: ListRequest): Promise<Page<BundleRecipientRow>> {
    return selectPage(
      this.db.selectFrom('bundle_recipients').selectAll().where('bundle_id', '=', bundleId),
      list,
    )
  }

  /** The bundle's recipients at these (lowercased) addresses. */
  recipientsAt(bundleId: number, lower: string[]): Promise<BundleRecipientRow[]> {
    if (lower.length === 0) return Promise.resolve([])
    return this.db
      .selectFrom('bundle_recipients')
      .selectAll()
      .where('bundle_id', '=', bundleId)
      .where('recipient_lower', 'in', lower)
      .execute()
  }

  async insertRecipient(values: Insertable<BundleRecipientsTable>): Promise<BundleRecipientRow> {
    return this.db.insertInto('bundle_recipients').values(values).returningAll().executeTakeFirstOrThrow()
  }

  async updateRecipient(id: number, patch: Updateable<BundleRecipientsTable>): Promise<void> {
    await this.db.updateTable('bundle_recipients').set(patch).where('id', '=', id).execute()
  }

  /** Share-link messages queued for this sender (null: site-wide keys) since `since`. */
  async sharesSince(siteId: number, senderUserId: number | null, since: number): Promise<number> {
    const row = await this.db
      .selectFrom('mail_outbox')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('site_id', '=', siteId)
      .where('kind', '=', 'bundle_share')
      .where('sender_user_id', senderUserId === null ? 'is' : '=', senderUserId)
      .where('created_at', '>', since)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  /** `bundleOwner` undefined: on every bundle of the site. */
  notificationPage(
    siteId: number,
    bundleOwner: number | undefined,
    list: ListRequest,
  ): Promise<Page<BundleNotificationRow>> {
    let q = this.db
      .selectFrom('bundle_notifications')
      .innerJoin('bundles', 'bundles.id', 'bundle_notifications.bundle_id')
      .selectAll('bundle_notifications')
      .where('bundle_notifications.site_id', '=', siteId)
    if (bundleOwner !== undefined) q = q.where('bundles.user_id', '=', bundleOwner)
    return selectPage(q, list)
  }

  findNotification(siteId: number, id: number): Promise<BundleNotificationRow | undefined> {
    return this.db
      .selectFrom('bundle_notifications')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  async insertNotification(values: Insertable<BundleNotificationsTable>): Promise<number> {
    const row = await this.db
      .insertInto('bundle_notifications')
      .values(values)
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  }

  async updateNotification(id: number, patch: Updateable<BundleNotificationsTable>): Promise<void> {
    await this.db.updateTable('bundle_notifications').set(patch).where('id', '=', id).execute()
  }

  async deleteNotification(id: number): Promise<void> {
    await this.db.deleteFrom('bundle_notifications').where('id', '=', id).execute()
  }

  /** The users to tell of this event on the bundle, with an e-mail address. */
  notified(
    bundleId: number,
    event: 'registration' | 'upload',
  ): Promise<{ user_id: number; email: string; name: string | null; username: string }[]> {
    return this.db
      .selectFrom('bundle_notifications')
      .innerJoin('users', 'users.id', 'bundle_notifications.notify_user_id')
      .select(['users.id as user_id', 'users.email as email', 'users.name as name', 'users.username'])
      .where('bundle_notifications.bundle_id', '=', bundleId)
      .where(event === 'registration' ? 'notify_on_registration' : 'notify_on_upload', '=', 1)
      .where('users.disabled', '=', 0)
      .where('users.email', 'is not', null)
      .where('users.email', '!=', '')
      .orderBy('bundle_notifications.id')
      .execute() as Promise<{ user_id: number; email: string; name: string | null; username: string }[]>
  }
}
