import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.js'

/** `accountname` of a webhook: the site's name, set at start-up from SITE_NAME (one read per site). */
export class SiteNames {
  private readonly reads = new Map<number, Promise<string>>()
  /** Names once read, so that a delivery does not wait a turn for one. */
  private readonly names = new Map<number, string>()

  constructor(private readonly db: Kysely<Database>) {}

  known(siteId: number): string | undefined {
    return this.names.get(siteId)
  }

  read(siteId: number): Promise<string> {
    let name = this.reads.get(siteId)
    if (name === undefined) {
      name = this.db
        .selectFrom('sites')
        .select('name')
        .where('id', '=', siteId)
        .executeTakeFirstOrThrow()
        .then((site) => {
          this.names.set(siteId, site.name)
          return site.name
        })
      name.catch(() => this.reads.delete(siteId))
      this.reads.set(siteId, name)
    }
    return name
  }
}
