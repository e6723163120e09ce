/** Where a site's signing secret is stored (the sites' repository). */
export interface SigningSecretSource {
  signingSecret(siteId: number): Promise<string>
}

/**
 * Each site's signing secret (cursors, signed URLs), read once per process: a secret is generated
 * when its site is created and never changes.
 */
export class SiteSecrets {
  private readonly known = new Map<number, string>()

  constructor(private readonly sites: SigningSecretSource) {}

  async signingSecret(siteId: number): Promise<string> {
    const cached = this.known.get(siteId)
    if (cached !== undefined) return cached
    const secret = await this.sites.signingSecret(siteId)
    this.known.set(siteId, secret)
    return secret
  }
}
