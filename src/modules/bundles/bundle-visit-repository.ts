import type { Insertable, Kysely, Selectable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type {
  BundleActionsTable,
  BundleDownloadsTable,
  BundleRegistrationsTable,
  Database,
} from '../../db/schema.js'

export type BundleRegistrationRow = Selectable<BundleRegistrationsTable>
/** A registration with its bundle's code. */
export type RegistrationWithCode = BundleRegistrationRow & { bundle_code: string }
export type BundleDownloadRow = Selectable<BundleDownloadsTable> & { registration: RegistrationWithCode }
export type BundleActionRow = Selectable<BundleActionsTable> & { registration: RegistrationWithCode }

/** Which bundles a list covers: a site's, one creator's, and optionally one bundle or registration. */
export interface VisitScope {
  siteId: number
  /** undefined: every creator's (site admins). */
  userId: number | undefined
  bundleId?: number | undefined
  registrationId?: number | undefined
}

/** The visits of share links: registrations, and the downloads and actions of each. */
export class BundleVisitRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new BundleVisitRepository(db, this.dialect) as this
  }

  /** Takes the bundle row's lock (PostgreSQL) so that registrations of one bundle count in turn. */
  async lockBundle(bundleId: number): Promise<void> {
    await this.db
      .updateTable('bundles')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', bundleId)
      .execute()
  }

  async countRegistrations(bundleId: number): Promise<number> {
    const row = await this.db
      .selectFrom('bundle_registrations')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('bundle_id', '=', bundleId)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async insertRegistration(values: Insertable<BundleRegistrationsTable>): Promise<BundleRegistrationRow> {
    return this.db.insertInto('bundle_registrations').values(values).returningAll().executeTakeFirstOrThrow()
  }

  findRegistrationByHash(codeHash: string): Promise<BundleRegistrationRow | undefined> {
    return this.db
      .selectFrom('bundle_registrations')
      .selectAll()
      .where('code_hash', '=', codeHash)
      .executeTakeFirst()
  }

  findRegistration(siteId: number, id: number): Promise<BundleRegistrationRow | undefined> {
    return this.db
      .selectFrom('bundle_registrations')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  async insertDownload(values: Insertable<BundleDownloadsTable>): Promise<void> {
    await this.db.insertInto('bundle_downloads').values(values).execute()
  }

  async insertAction(values: Insertable<BundleActionsTable>): Promise<void> {
    await this.db.insertInto('bundle_actions').values(values).execute()
  }

  registrationPage(scope: VisitScope, list: ListRequest): Promise<Page<RegistrationWithCode>> {
    let q = this.db
      .selectFrom('bundle_registrations')
      .innerJoin('bundles', 'bundles.id', 'bundle_registrations.bundle_id')
      .selectAll('bundle_registrations')
      .select('bundles.code as bundle_code')
      .where('bundle_registrations.site_id', '=', scope.siteId)
    if (scope.userId !== undefined) q = q.where('bundles.user_id', '=', scope.userId)
    if (scope.bundleId !== undefined) q = q.where('bundle_registrations.bundle_id', '=', scope.bundleId)
    return selectPage(q, list)
  }

  async downloadPage(scope: VisitScope, list: ListRequest): Promise<Page<BundleDownloadRow>> {
    let q = this.db
      .selectFrom('bundle_downloads')
      .innerJoin('bundles', 'bundles.id', 'bundle_downloads.bundle_id')
      .selectAll('bundle_downloads')
      .where('bundle_downloads.site_id', '=', scope.siteId)
    if (scope.userId !== undefined) q = q.where('bundles.user_id', '=', scope.userId)
    if (scope.bundleId !== undefined) q = q.where('bundle_downloads.bundle_id', '=', scope.bundleId)
    if (scope.registrationId !== undefined) {
      q = q.where('bundle_downloads.bundle_registration_id', '=', scope.registrationId)
    }
    const page = await selectPage(q, list)
    return this.withRegistrations(page)
  }

  async actionPage(scope: VisitScope, list: ListRequest): Promise<Page<BundleActionRow>> {
    let q = this.db
      .selectFrom('bundle_actions')
      .innerJoin('bundles', 'bundles.id', 'bundle_actions.bundle_id')
      .selectAll('bundle_actions')
      .where('bundle_actions.site_id', '=', scope.siteId)
    if (scope.userId !== undefined) q = q.where('bundles.user_id', '=', scope.userId)
    const page = await selectPage(q, list)
    return this.withRegistrations(page)
  }

  /** Each row with its registration (and its link's code and description), read in one query for the page. */
  async withRegistrations<R extends { bundle_registration_id: number }>(
    page: Page<R>,
  ): Promise<Page<R & { registration: RegistrationWithCode & { bundle_description: string | null } }>> {
    const ids = [...new Set(page.items.map((r) => r.bundle_registration_id))]
    const regs =
      ids.length === 0
        ? []
        : await this.db
            .selectFrom('bundle_registrations')
            .innerJoin('bundles', 'bundles.id', 'bundle_registrations.bundle_id')
            .selectAll('bundle_registrations')
            .select(['bundles.code as bundle_code', 'bundles.description as bundle_description'])
            .where('bundle_registrations.id', 'in', ids)
            .execute()
    const byId = new Map(regs.map((r) => [Number(r.id), r]))
    return {
      ...page,
      items: page.items.map((r) => ({ ...r, registration: byId.get(Number(r.bundle_registration_id))! })),
    }
  }
}
