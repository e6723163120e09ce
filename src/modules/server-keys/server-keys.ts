import type { ServerKeyRepository } from './server-key-repository.js'

/** A key set: file name → file text (OpenSSH or PEM), as it is kept on disk. */
export type KeySet = Record<string, string>

/**
 * The server's own keys, kept in the database so that every node serving the site presents the
 * same ones (a client behind a load balancer that meets another node must see the fingerprint it
 * trusted). A set is proposed by the first node that needs it (the keys it already has on disk,
 * or new ones) and stored only if no node stored one first; every node then uses the stored set.
 */
export class ServerKeys {
  constructor(
    private readonly repo: ServerKeyRepository,
    private readonly now: () => number,
  ) {}

  /** The stored set `name`; when there is none yet, `propose()`'s, unless another node's won. */
  async agree(name: string, propose: () => Promise<KeySet>): Promise<KeySet> {
    const stored = await this.repo.find(name)
    if (stored !== null) return parse(name, stored)
    const proposed = await propose()
    return parse(name, await this.repo.insertIfAbsent(name, JSON.stringify(proposed), this.now()))
  }
}

function parse(name: string, text: string): KeySet {
  const value = JSON.parse(text) as unknown
  if (!value || typeof value !== 'object' || Object.values(value).some((v) => typeof v !== 'string')) {
    throw new Error(`The server key set ${name} in the database is not a set of files`)
  }
  return value as KeySet
}
