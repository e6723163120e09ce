import type { SiteRepository } from './site-repository.js'

/**
 * Each site's signing secret (cursors, signed URLs), read once per process: a secret is generated
 * when its site is created and never changes.
 */
export class SiteSecrets {
  private readonly known = new Map<number, string>()

  constructor(private readonly sites: SiteRepository) {}

  async signingSecret(siteId: number): Promise<string> {
    const cached = this.known.get(siteId)
    if (cached !== undefined) return cached
    const secret = await this.sites.signingSecret(siteId)
    this.known.set(siteId, secret)
    return secret
  }
}
