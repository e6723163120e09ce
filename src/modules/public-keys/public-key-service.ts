import type { Selectable } from 'kysely'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { isUniqueViolation } from '../../db/errors.js'
import type { UsersTable } from '../../db/schema.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import { parsePublicKey } from '../ssh/ssh-keys.js'
import type { UserRepository } from '../users/user-repository.js'
import { PUBLIC_KEY_LIST, type PublicKeyRepository, type PublicKeyRow } from './public-key-repository.js'

/** The PublicKey resource (Files.com's fields; keys are registered, never generated here). */
export interface PublicKeyJson {
  id: number
  title: string
  created_at: string
  fingerprint: string
  fingerprint_sha256: string
  last_login_at: string | null
  username: string
  user_id: number
  public_key: string
}

const READ_ONLY_FIELDS = [
  'created_at',
  'fingerprint',
  'fingerprint_sha256',
  'last_login_at',
  'username',
  'user_id',
  'public_key',
]

export interface CreatePublicKeyInput {
  title: string
  public_key: string
  /** 0 or absent: the caller. */
  user_id?: number
}

/**
 * SSH public keys for SFTP logins. Site admins manage any user's keys, other users their own;
 * a site-wide API key has no user, so it must name one. A key may be registered once per site,
 * so each key logs in as exactly one user.
 */
export class PublicKeyService {
  constructor(
    private readonly repo: PublicKeyRepository,
    private readonly users: UserRepository,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
  ) {}

  async list(p: Principal, query: Record<string, unknown>): Promise<Page<PublicKeyJson>> {
    const userId = this.owner(p, query['user_id'] as number | undefined, 'list')
    const list = await readListRequest(this.secrets, p.siteId, PUBLIC_KEY_LIST, query, {
      user_id: userId ?? 'all',
    })
    return mapPage(await this.repo.page(p.siteId, userId, list), toJson)
  }

  async get(p: Principal, id: number): Promise<PublicKeyJson> {
    return toJson(await this.visible(p, id))
  }

  async create(p: Principal, input: CreatePublicKeyInput): Promise<PublicKeyJson> {
    const userId = this.owner(p, input.user_id, 'create')
    if (userId === undefined) {
      throw ERRORS.userRequired('A site-wide API key has no user: name user_id')
    }
    if (userId !== p.user?.id && !(await this.users.find(p.siteId, userId))) {
      throw ERRORS.userNotFound(`User ${userId} not found`)
    }
    const title = input.title.trim()
    if (title === '') throw ApiError.modelSave({ title: ['must not be blank'] })
    const key = parsePublicKey(input.public_key)
    if (!key) {
      throw ApiError.modelSave({
        public_key: ['must be an SSH public key, e.g. "ssh-ed25519 AAAA… comment" from a .pub file'],
      })
    }
    let id: number
    try {
      id = await this.repo.insert({
        site_id: p.siteId,
        user_id: userId,
        title,
        public_key: key.openssh,
        fingerprint_md5: key.fingerprintMd5,
        fingerprint_sha256: key.fingerprintSha256,
        created_at: this.now(),
        last_login_at: null,
      })
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw ApiError.modelSave({ public_key: ['is already registered (a key logs in as one user only)'] })
      }
      throw err
    }
    return toJson((await this.repo.find(p.siteId, id))!)
  }

  /** Only `title` changes; the other fields (what the SDK's `save()` sends back) must be as shown. */
  async update(
    p: Principal,
    id: number,
    input: { title?: string; [echo: string]: unknown },
  ): Promise<PublicKeyJson> {
    const row = await this.visible(p, id)
    refuseChangedReadOnly(input, toJson(row), READ_ONLY_FIELDS)
    if (input.title !== undefined) {
      const title = input.title.trim()
      if (title === '') throw ApiError.modelSave({ title: ['must not be blank'] })
      await this.repo.setTitle(row.id, title)
      row.title = title
    }
    return toJson(row)
  }

  async remove(p: Principal, id: number): Promise<void> {
    await this.repo.remove((await this.visible(p, id)).id)
  }

  /**
   * The user an SSH key blob logs in as under this name, or null. Notes the login time on the
   * key when `signed` (the client proved it holds the private key).
   */
  async userForKey(
    siteId: number,
    username: string,
    fingerprintSha256: string,
    signed: boolean,
  ): Promise<Selectable<UsersTable> | null> {
    const found = await this.repo.userForLogin(siteId, username.toLowerCase(), fingerprintSha256)
    if (!found) return null
    if (signed) await this.repo.touchLogin(found.keyId, this.now())
    return found.user
  }

  private async visible(p: Principal, id: number): Promise<PublicKeyRow> {
    const row = await this.repo.find(p.siteId, id)
    if (!row) throw ERRORS.notFound(`Public key ${id} not found`)
    if (!isSiteAdmin(p) && row.user_id !== p.user?.id) {
      throw ERRORS.siteAdminRequired('Only site administrators can manage other users’ keys')
    }
    return row
  }

  /** Whose keys: `user_id` as validated by the route (0 or absent: the caller's own). */
  private owner(p: Principal, n: number | undefined, verb: 'list' | 'create'): number | undefined {
    if (n === undefined || n === 0) {
      // A site admin's plain list shows every user's keys.
      if (verb === 'list' && n === undefined && isSiteAdmin(p)) return undefined
      return p.user?.id
    }
    if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin(`Only site administrators can ${verb} other users’ keys`)
    }
    return n
  }
}

function toJson(r: PublicKeyRow): PublicKeyJson {
  return {
    id: r.id,
    title: r.title,
    created_at: formatDateTime(r.created_at)!,
    fingerprint: r.fingerprint_md5,
    fingerprint_sha256: r.fingerprint_sha256,
    last_login_at: formatDateTime(r.last_login_at),
    username: r.username,
    user_id: r.user_id,
    public_key: r.public_key,
  }
}
