import { type Kysely, sql } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'
import type { BundleRecipientRow } from './bundle-mail-repository.js'
import { BundleVisitRepository } from './bundle-visit-repository.js'
import { INBOX_PERMISSIONS, type InboxRegistrationRow, type InboxUploadRow } from './inbox-model.js'

/** Which inboxes a list covers: a site's, one creator's, or one inbox. */
export interface InboxScope {
  siteId: number
  /** undefined: every creator's (site admins). */
  userId: number | undefined
  inboxId?: number | undefined
}

/** The records of share links that are inboxes (write-only links), read as the Inbox models. */
export class InboxRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new InboxRepository(db, this.dialect) as this
  }

  /** The inbox's recipients, each with `has_registrations` (1 or 0) computed in a derived table. */
  recipientPage(
    bundleId: number,
    list: ListRequest,
  ): Promise<Page<BundleRecipientRow & { has_registrations: number }>> {
    const inner = this.db
      .selectFrom('bundle_recipients')
      .selectAll('bundle_recipients')
      .select(
        sql<number>`case when exists (select 1 from bundle_registrations g where g.bundle_id = bundle_recipients.bundle_id and lower(g.email) = bundle_recipients.recipient_lower) then 1 else 0 end`.as(
          'has_registrations',
        ),
      )
      .where('bundle_recipients.bundle_id', '=', bundleId)
    return selectPage(this.db.selectFrom(inner.as('r')).selectAll(), list)
  }

  registrationPage(scope: InboxScope, list: ListRequest): Promise<Page<InboxRegistrationRow>> {
    let q = this.inboxRegistrations()
      .where('bundle_registrations.site_id', '=', scope.siteId)
      .where('bundles.permissions', '=', INBOX_PERMISSIONS)
    if (scope.userId !== undefined) q = q.where('bundles.user_id', '=', scope.userId)
    if (scope.inboxId !== undefined) q = q.where('bundle_registrations.bundle_id', '=', scope.inboxId)
    return selectPage(q, list)
  }

  /** Uploads through inboxes: the bundle actions (create, update) of write-only links. */
  async uploadPage(scope: InboxScope, list: ListRequest): Promise<Page<InboxUploadRow>> {
    let q = this.db
      .selectFrom('bundle_actions')
      .innerJoin('bundles', 'bundles.id', 'bundle_actions.bundle_id')
      .selectAll('bundle_actions')
      .where('bundle_actions.site_id', '=', scope.siteId)
      .where('bundles.permissions', '=', INBOX_PERMISSIONS)
    if (scope.userId !== undefined) q = q.where('bundles.user_id', '=', scope.userId)
    if (scope.inboxId !== undefined) q = q.where('bundle_actions.bundle_id', '=', scope.inboxId)
    // The same registration lookup as a link's own lists: one query for the page.
    return new BundleVisitRepository(this.db, this.dialect).withRegistrations(await selectPage(q, list))
  }

  private inboxRegistrations() {
    return this.db
      .selectFrom('bundle_registrations')
      .innerJoin('bundles', 'bundles.id', 'bundle_registrations.bundle_id')
      .selectAll('bundle_registrations')
      .select(['bundles.code as bundle_code', 'bundles.description as bundle_description'])
  }
}
