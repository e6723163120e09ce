import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'

/**
 * Each site's signing secret (cursors, signed URLs), read once per process: a secret is generated
 * when its site is created and never changes.
 */
export class SiteSecrets {
  private readonly known = new Map<number, string>()

  constructor(private readonly db: Kysely<Database>) {}

  async signingSecret(siteId: number): Promise<string> {
    const cached = this.known.get(siteId)
    if (cached !== undefined) return cached
    const site = await this.db
      .selectFrom('sites')
      .select('signing_secret')
      .where('id', '=', siteId)
      .executeTakeFirstOrThrow()
    this.known.set(siteId, site.signing_secret)
    return site.signing_secret
  }
}
