import type { Insertable, Kysely, Selectable, Updateable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { BundlesTable, Database } from '../../db/schema.js'
import type { FileRepository } from '../files/file-repository.js'

export type BundleRow = Selectable<BundlesTable>
/** A shared path as the API shows it. */
export interface BundlePathJson {
  recursive: boolean
  path: string
}
/** A bundle with its creator's username. */
export type BundleWithOwner = BundleRow & { username: string | null; owner_disabled: number | null }

/** The bundles and bundle_paths tables. */
export class BundleRepository extends Repository {
  constructor(
    db: Kysely<Database>,
    dialect: Repository['dialect'],
    /** The files table, where shared paths are looked up. */
    private readonly files: FileRepository,
  ) {
    super(db, dialect)
  }

  on(db: Kysely<Database>): this {
    return new BundleRepository(db, this.dialect, this.files.on(db)) as this
  }

  private withOwner(siteId: number) {
    return this.db
      .selectFrom('bundles')
      .leftJoin('users', 'users.id', 'bundles.user_id')
      .selectAll('bundles')
      .select(['users.username as username', 'users.disabled as owner_disabled'])
      .where('bundles.site_id', '=', siteId)
  }

  /** `userId` undefined: every bundle of the site. */
  page(siteId: number, userId: number | undefined, list: ListRequest): Promise<Page<BundleWithOwner>> {
    let q = this.withOwner(siteId)
    if (userId !== undefined) q = q.where('bundles.user_id', '=', userId)
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<BundleWithOwner | undefined> {
    return this.withOwner(siteId).where('bundles.id', '=', id).executeTakeFirst()
  }

  get(siteId: number, id: number): Promise<BundleWithOwner> {
    return this.withOwner(siteId).where('bundles.id', '=', id).executeTakeFirstOrThrow()
  }

  /** The bundle using this code, case-insensitively. */
  findByCode(siteId: number, code: string): Promise<BundleWithOwner | undefined> {
    return this.withOwner(siteId).where('bundles.code_lower', '=', code.toLowerCase()).executeTakeFirst()
  }

  async paths(bundleId: number): Promise<BundlePathJson[]> {
    const rows = await this.db
      .selectFrom('bundle_paths')
      .select(['path', 'recursive'])
      .where('bundle_id', '=', bundleId)
      .orderBy('id')
      .execute()
    return rows.map((r) => ({ recursive: r.recursive === 1, path: r.path }))
  }

  async insert(values: Insertable<BundlesTable>): Promise<number> {
    const row = await this.db.insertInto('bundles').values(values).returning('id').executeTakeFirstOrThrow()
    return row.id
  }

  async update(id: number, patch: Updateable<BundlesTable>): Promise<void> {
    await this.db.updateTable('bundles').set(patch).where('id', '=', id).execute()
  }

  /** Replaces the bundle's paths with these, in this order. */
  async setPaths(bundleId: number, paths: BundlePathJson[]): Promise<void> {
    await this.db.deleteFrom('bundle_paths').where('bundle_id', '=', bundleId).execute()
    await this.db
      .insertInto('bundle_paths')
      .values(paths.map((p) => ({ bundle_id: bundleId, path: p.path, recursive: p.recursive ? 1 : 0 })))
      .execute()
  }

  /** The stored spelling of each of these paths that names a file or folder, by lowercased path. */
  async existing(siteId: number, paths: string[]): Promise<Map<string, string>> {
    const rows = await this.files.kindsAt(
      siteId,
      paths.map((p) => p.toLowerCase()),
    )
    return new Map(rows.map((r) => [r.path_lower, r.path]))
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('bundles').where('id', '=', id).execute()
  }
}
