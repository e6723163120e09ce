import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, type ModelErrors } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import type { Database } from '../../db/schema.js'
import { IdentityCache } from '../../identity/identity-cache.js'
import { isSiteAdmin, type Principal, requireSiteAdmin, type UserRow } from '../../identity/principal.js'
import { hashPassword } from '../../security/secrets.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { newUserAccess, userAccessPatch } from '../access/user-access.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { readListRequest } from '../list-request.js'
import type { PasswordPolicy } from '../passwords/password-policy.js'
import { checkValidityDays } from '../passwords/password-rules.js'
import {
  blankToNull,
  checkEmail,
  checkPassword,
  checkUsername,
  toUserJson,
  USER_LIST,
  type UserJson,
} from './user-model.js'
import {
  attachmentsPermission,
  bit,
  type CreateUserInput,
  READ_ONLY_FIELDS,
  refuseSelfServiceLimits,
  type UpdateUserInput,
  userPatch,
} from './user-patch.js'
import { type UserRepository, usernameTaken } from './user-repository.js'

export type { CreateUserInput, UpdateUserInput } from './user-patch.js'

/**
 * What a change of password or of a user's standing does to the user's sessions (the sessions
 * module's SessionService): given to the service, so that users never import sessions, which
 * read users.
 */
export interface UserSessions {
  reauthenticate(p: Principal, header: string | undefined): Promise<void>
  endAllFor(userId: number, db?: Kysely<Database>): Promise<void>
  endOthers(userId: number, keepHash: string, db?: Kysely<Database>): Promise<void>
}

/**
 * What else a new user gets in its own transaction (the folders of `create_user_folders`
 * behaviors): given to the service, so that users never import behaviors, which read users.
 */
export interface NewUserFolders {
  forNewUser(db: Kysely<Database>, p: Principal, user: UserRow, now: number): Promise<void>
}

const notFound = (id: number) => ERRORS.userNotFound(`User ${id} not found`)
const ANOTHER_ADMIN = 'make another user a site administrator first'

export class UserService {
  constructor(
    readonly users: UserRepository,
    readonly sessions: UserSessions,
    private readonly secrets: SiteSecrets,
    readonly now: () => number = Date.now,
    private readonly identities: IdentityCache = new IdentityCache(0),
    /** The folders `create_user_folders` behaviors make for a new user, in its transaction. */
    private readonly userFolders?: NewUserFolders,
    /** The site's password rules, enforced wherever a password is set. */
    private readonly passwords?: PasswordPolicy,
  ) {}

  /**
   * Rows as the API shows them, with their password's age under the site's rules and whether they
   * have a confirmed two-factor method (read once for all of `rows`).
   */
  private async shown(siteId: number, rows: UserRow[]): Promise<(row: UserRow) => UserJson> {
    const twoFactor = await this.users.withTwoFactor(rows.map((r) => r.id))
    if (!this.passwords) return (row) => toUserJson(row, undefined, twoFactor.has(row.id))
    const rules = await this.passwords.rules(siteId)
    const policy = this.passwords
    return (row) => toUserJson(row, policy.age(row, rules), twoFactor.has(row.id))
  }

  /** GET /users: a site admin sees every user of the site, anyone else only themselves. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<UserJson>> {
    const self = isSiteAdmin(p) ? null : p.user!.id
    const list = await readListRequest(this.secrets, p.siteId, USER_LIST, query, { scope: self ?? 'all' })
    const page = await this.users.page(p.siteId, self, list)
    return mapPage(page, await this.shown(p.siteId, page.items))
  }

  /** GET /user: whoever is calling (a session's user or an API key's owner). */
  async current(p: Principal): Promise<UserJson> {
    if (!p.user) throw ERRORS.notFound('A site-wide API key belongs to no user')
    return this.get(p, p.user.id)
  }

  async get(p: Principal, id: number): Promise<UserJson> {
    const row = await this.visible(p, id)
    return (await this.shown(p.siteId, [row]))(row)
  }

  /** POST /users (site admins) and `wharf users create`. */
  async create(p: Principal, input: CreateUserInput): Promise<UserJson> {
    requireSiteAdmin(p)
    const errors: ModelErrors = {}
    checkUsername(input.username, errors)
    if (input.password !== undefined) {
      checkPassword(input.password, input.password_confirmation, errors)
      await this.passwords?.check(p.siteId, input.password, { username: input.username }, errors)
    }
    const email = checkEmail(input.email ?? null, errors)
    const mayShare = attachmentsPermission(input, errors)
    const validityDays =
      input.password_validity_days === undefined
        ? null
        : checkValidityDays(input.password_validity_days, errors)
    const access = newUserAccess(input, errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    if (await this.users.usernameExists(p.siteId, input.username)) throw usernameTaken()

    const now = this.now()
    const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null
    const row = await this.users.transaction(async (tx) => {
      const inserted = await tx.insert({
        site_id: p.siteId,
        username: input.username,
        username_lower: input.username.toLowerCase(),
        password_hash: passwordHash,
        name: blankToNull(input.name ?? null),
        email,
        site_admin: bit(input.site_admin === true),
        self_managed: bit(input.self_managed !== false),
        disabled: bit(input.disabled === true),
        attachments_permission: bit(mayShare === true),
        require_password_change: bit(input.require_password_change === true),
        password_validity_days: validityDays ?? null,
        ...access,
        require_2fa: input.require_2fa ?? 'use_system_setting',
        created_at: now,
        updated_at: now,
        last_login_at: null,
        password_set_at: passwordHash ? now : null,
      })
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'user_create',
          display: `Created user ${inserted.username}${inserted.site_admin ? ' (site administrator)' : ''}`,
          targets: [{ type: 'user', id: inserted.id, name: inserted.username }],
        },
        now,
      )
      await this.userFolders?.forNewUser(tx.db, p, inserted, now)
      return inserted
    })
    return (await this.shown(p.siteId, [row]))(row)
  }

  /**
   * PATCH /users/{id}. Site admins change any field of anyone; other users only their own name,
   * e-mail and password. A password change through a session needs reauthentication.
   */
  async update(
    p: Principal,
    id: number,
    input: UpdateUserInput,
    reauthentication?: string,
  ): Promise<UserJson> {
    const row = await this.visible(p, id)
    const show = await this.shown(p.siteId, [row])
    refuseChangedReadOnly(input, show(row), READ_ONLY_FIELDS)
    if (!isSiteAdmin(p)) refuseSelfServiceLimits(row, input)
    const passwordErrors: ModelErrors = {}
    if (input.password !== undefined) {
      // The rules apply to the name the user will have after this change.
      const username = input.username ?? row.username
      await this.passwords?.check(p.siteId, input.password, { username, user: row }, passwordErrors)
    }
    const patch = userPatch(row, input, p.user?.id === row.id, passwordErrors)
    const accessErrors: ModelErrors = {}
    const self = p.user?.id === row.id
    Object.assign(patch, userAccessPatch(row, input, self ? p.ip : null, this.now(), accessErrors))
    if (Object.keys(accessErrors).length) throw ApiError.modelSave(accessErrors)
    if (patch.username_lower !== undefined && patch.username_lower !== row.username_lower) {
      if (await this.users.usernameExists(p.siteId, patch.username!)) throw usernameTaken()
    }

    const changed = Object.keys(patch).filter((k) => k !== 'username_lower')
    if (input.password !== undefined) {
      await this.sessions.reauthenticate(p, reauthentication)
      changed.push('password')
    }
    if (changed.length === 0) return show(row)

    const now = this.now()
    if (input.password !== undefined) {
      patch.password_hash = await hashPassword(input.password)
      patch.password_set_at = now
      // Users changing their own password have done what the flag asked (an echo of the flag,
      // as the SDKs' save() sends, does not set it again).
      if (
        p.user?.id === row.id &&
        row.require_password_change === 1 &&
        patch.require_password_change === undefined
      )
        patch.require_password_change = 0
    }
    patch.updated_at = now
    const updated = await this.users.transaction(async (tx) => {
      if (patch.site_admin === 0 || patch.disabled === 1) {
        const refusal: ModelErrors =
          patch.site_admin === 0
            ? {
                site_admin: [`cannot be removed from the last enabled site administrator: ${ANOTHER_ADMIN}`],
              }
            : { disabled: [`cannot be set on the last enabled site administrator: ${ANOTHER_ADMIN}`] }
        await tx.keepAnAdministrator(p.siteId, row.id, ApiError.modelSave(refusal))
      }
      const after = await tx.update(row.id, patch)
      if (input.password !== undefined) {
        await this.passwords?.replaced(tx.db, row, now)
        await this.endSessionsAfterPasswordChange(tx.db, p, row.id)
      }
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'user_update',
          display: `Updated user ${row.username} (${changed.join(', ')})`,
          targets: [{ type: 'user', id: row.id, name: patch.username ?? row.username }],
        },
        now,
      )
      return after
    })
    this.identities.clear()
    return show(updated)
  }

  /** DELETE /users/{id}: site admins only, never themselves; through a session it needs reauthentication. */
  async remove(p: Principal, id: number, reauthentication?: string): Promise<void> {
    requireSiteAdmin(p)
    const row = await this.find(p.siteId, id)
    if (p.user?.id === row.id)
      throw ApiError.modelSave({ user: ['cannot delete itself: ask another site administrator'] })
    await this.sessions.reauthenticate(p, reauthentication)
    const now = this.now()
    await this.users.transaction(async (tx) => {
      const refusal = {
        user: [`cannot be deleted while it is the last enabled site administrator: ${ANOTHER_ADMIN}`],
      }
      await tx.keepAnAdministrator(p.siteId, row.id, ApiError.modelSave(refusal))
      // Sessions, keys and folder permissions go with the user (foreign keys cascade); ending the
      // sessions explicitly keeps that true whatever the schema does later.
      await this.sessions.endAllFor(row.id, tx.db)
      await tx.delete(row.id)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'user_destroy',
          display: `Deleted user ${row.username}`,
          targets: [{ type: 'user', id: row.id, name: row.username }],
        },
        now,
      )
    })
    this.identities.clear()
  }

  // ---------- internals ----------

  private async find(siteId: number, id: number): Promise<UserRow> {
    const row = await this.users.find(siteId, id)
    if (!row) throw notFound(id)
    return row
  }

  /** A user who is not a site admin reaches only their own record (checked before existence). */
  private async visible(p: Principal, id: number): Promise<UserRow> {
    if (!isSiteAdmin(p) && p.user?.id !== id) {
      throw ERRORS.siteAdminRequired('Only site administrators can see or change other users')
    }
    return this.find(p.siteId, id)
  }

  /**
   * Someone else changed the password: every session of that user ends. The user changed their
   * own: the session making the change stays, the others (other devices) end.
   */
  private async endSessionsAfterPasswordChange(
    trx: Kysely<Database>,
    p: Principal,
    userId: number,
  ): Promise<void> {
    if (p.user?.id !== userId || !p.sessionHash) return this.sessions.endAllFor(userId, trx)
    await this.sessions.endOthers(userId, p.sessionHash, trx)
  }
}
