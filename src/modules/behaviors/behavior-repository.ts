import { type Insertable, type Kysely, type Selectable, type SqlBool, sql, type Updateable } from 'kysely'
import { foldersAbove } from '../../api/behavior-matching.js'
import type { ListRequest, ListSpec, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { BehaviorsTable, Database } from '../../db/schema.js'

export type BehaviorRow = Selectable<BehaviorsTable>

export const BEHAVIOR_LIST: ListSpec = {
  name: 'behaviors',
  idColumn: 'behaviors.id',
  sort: { behavior: { column: 'behaviors.behavior', type: 'string' } },
  filter: { behavior: { column: 'behaviors.behavior', type: 'string' } },
}

/** Which behaviors a list shows, beyond the list query's own filters. */
export interface BehaviorFilter {
  /** Only those on or inside these folders (absent: all). */
  within?: string[] | undefined
  /** Only those on exactly this folder. */
  path?: string | undefined
  /** Only these ids. */
  ids?: number[] | undefined
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The behaviors table. */
export class BehaviorRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new BehaviorRepository(db, this.dialect) as this
  }

  page(siteId: number, filter: BehaviorFilter, list: ListRequest): Promise<Page<BehaviorRow>> {
    let q = this.db.selectFrom('behaviors').selectAll().where('site_id', '=', siteId)
    const within = filter.within
    if (within) {
      q = q.where((eb) =>
        eb.or(
          within.map((f) => {
            const lower = f.toLowerCase()
            if (lower === '') return sql<SqlBool>`1 = 1`
            return sql<SqlBool>`(path_lower = ${lower} or path_lower like ${`${escapeLike(lower)}/%`} escape '\\')`
          }),
        ),
      )
    }
    if (filter.path !== undefined) q = q.where('path_lower', '=', filter.path.toLowerCase())
    if (filter.ids) q = filter.ids.length ? q.where('id', 'in', filter.ids) : q.where(sql<SqlBool>`1 = 0`)
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<BehaviorRow | undefined> {
    return this.db
      .selectFrom('behaviors')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  /**
   * Every behavior on `folder` and on the folders above it, in one indexed statement: what
   * `applyingAt` (behavior-matching.ts) decides from. `types` narrows to some behavior types.
   */
  onAndAbove(siteId: number, folder: string, types?: readonly string[]): Promise<BehaviorRow[]> {
    let q = this.db
      .selectFrom('behaviors')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('path_lower', 'in', foldersAbove(folder.toLowerCase()))
    if (types) q = q.where('behavior', 'in', types)
    return q.orderBy('id').execute()
  }

  /** Every behavior of one type on the site. */
  ofType(siteId: number, type: string): Promise<BehaviorRow[]> {
    return this.db
      .selectFrom('behaviors')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('behavior', '=', type)
      .orderBy('id')
      .execute()
  }

  /** Every behavior of a type, in every site: what a background job of that type works through. */
  allOfType(type: string): Promise<BehaviorRow[]> {
    return this.db
      .selectFrom('behaviors')
      .selectAll()
      .where('behavior', '=', type)
      .orderBy('site_id')
      .orderBy('id')
      .execute()
  }

  /**
   * The behaviors on `folder`, above it and inside it, in one statement: what a folder moved or
   * copied to `folder` meets wherever its files land.
   */
  aroundTree(siteId: number, folder: string, types: readonly string[]): Promise<BehaviorRow[]> {
    const lower = folder.toLowerCase()
    return this.db
      .selectFrom('behaviors')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('behavior', 'in', types)
      .where((eb) =>
        eb.or([
          eb('path_lower', 'in', foldersAbove(lower)),
          sql<SqlBool>`path_lower like ${`${escapeLike(lower)}/%`} escape '\\'`,
        ]),
      )
      .orderBy('id')
      .execute()
  }

  /**
   * A folder moved from `from` to `to`: the behaviors on it and inside it move with it (in the
   * move's transaction, when this repository is bound to it).
   */
  async moveTree(siteId: number, from: string, to: string): Promise<void> {
    const lower = from.toLowerCase()
    // Positions count characters, as SQL's substr does.
    const rest = [...from].length + 1
    await this.db
      .updateTable('behaviors')
      .set({
        path: sql<string>`cast(${to} as text) || substr(path, cast(${rest} as integer))`,
        path_lower: sql<string>`cast(${to.toLowerCase()} as text) || substr(path_lower, cast(${rest} as integer))`,
      })
      .where('site_id', '=', siteId)
      .where((eb) =>
        eb.or([
          eb('path_lower', '=', lower),
          sql<SqlBool>`path_lower like ${`${escapeLike(lower)}/%`} escape '\\'`,
        ]),
      )
      .execute()
  }

  async insert(values: Insertable<BehaviorsTable>): Promise<BehaviorRow> {
    return this.db.insertInto('behaviors').values(values).returningAll().executeTakeFirstOrThrow()
  }

  async update(id: number, values: Updateable<BehaviorsTable>): Promise<void> {
    await this.db.updateTable('behaviors').set(values).where('id', '=', id).execute()
  }

  async remove(id: number): Promise<void> {
    await this.db.deleteFrom('behaviors').where('id', '=', id).execute()
  }
}
