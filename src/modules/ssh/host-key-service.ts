import { ERRORS } from '../../api/error-factories.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { HostKeys } from './host-keys.js'

/** The SftpHostKey resource (Files.com's fields; the private key is never shown). */
export interface SftpHostKeyJson {
  id: number
  name: string
  fingerprint_md5: string
  fingerprint_sha256: string
}

/**
 * The SFTP server's host keys, read-only, for site admins: what to tell partners so that they can
 * check the fingerprint their client shows on the first connection. The keys themselves come from
 * SFTP_HOST_KEY_FILES, or else the database (shared by every node; see HostKeys), and are changed
 * there, not through the API.
 */
export class HostKeyService {
  constructor(private readonly keys: HostKeys) {}

  async list(p: Principal): Promise<SftpHostKeyJson[]> {
    requireSiteAdmin(p)
    return (await this.keys.all()).map(toJson)
  }

  async get(p: Principal, id: number): Promise<SftpHostKeyJson> {
    requireSiteAdmin(p)
    const key = (await this.keys.all()).find((k) => k.id === id)
    if (!key) throw ERRORS.notFound(`SFTP host key ${id} not found`)
    return toJson(key)
  }
}

function toJson(k: { id: number; type: string; fingerprintMd5: string; fingerprintSha256: string }) {
  return {
    id: k.id,
    name: k.type,
    fingerprint_md5: k.fingerprintMd5,
    fingerprint_sha256: k.fingerprintSha256,
  }
}
