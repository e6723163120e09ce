import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { toPage } from '../../api/list-cursor.js'
import { parseListQuery } from '../../api/list-query.js'
import type { Page } from '../../api/list-spec.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { isUniqueViolation } from '../../db/errors.js'
import { applyListQuery } from '../../db/list-sql.js'
import type { Database } from '../../db/schema.js'
import { hashPassword } from '../../security/secrets.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { IdentityCache } from '../auth/identity-cache.js'
import { isSiteAdmin, type Principal, requireSiteAdmin, type UserRow } from '../auth/principal.js'
import type { SessionService } from '../sessions/session-service.js'
import type { SiteSecrets } from '../sites/site-secrets.js'
import { keepAnAdministrator } from './last-administrator.js'
import {
  blankToNull,
  checkEmail,
  checkPassword,
  checkUsername,
  toUserJson,
  USER_LIST,
  type UserJson,
} from './user-model.js'

export interface CreateUserInput {
  username: string
  password?: string | undefined
  password_confirmation?: string | undefined
  name?: string | null | undefined
  email?: string | null | undefined
  site_admin?: boolean | undefined
  self_managed?: boolean | undefined
  disabled?: boolean | undefined
}

export type UpdateUserInput = Partial<CreateUserInput> & {
  /** Read-only: accepted only as an echo of the current value (what the SDKs' `save()` sends). */
  created_at?: unknown
  last_login_at?: unknown
  password_set_time?: unknown
}

const READ_ONLY_FIELDS = ['created_at', 'last_login_at', 'password_set_time'] as const

/** What a user who is not a site admin may change on their own record. */
const SELF_SERVICE_FIELDS = new Set(['name', 'email', 'password', 'password_confirmation'])

const taken = () => ApiError.modelSave({ username: ['has already been taken'] })
const notFound = (id: number) => ERRORS.userNotFound(`User ${id} not found`)
const bit = (b: boolean) => (b ? 1 : 0)
const ANOTHER_ADMIN = 'make another user a site administrator first'

export class UserService {
  constructor(
    readonly db: Kysely<Database>,
    readonly sessions: SessionService,
    private readonly secrets: SiteSecrets,
    readonly now: () => number = Date.now,
    private readonly identities: IdentityCache = new IdentityCache(0),
  ) {}

  /** GET /users: a site admin sees every user of the site, anyone else only themselves. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<UserJson>> {
    const self = isSiteAdmin(p) ? null : p.user!.id
    const secret = await this.secrets.signingSecret(p.siteId)
    const lq = parseListQuery(USER_LIST, query, secret, { scope: self ?? 'all' })
    let q = this.db.selectFrom('users').selectAll('users').where('users.site_id', '=', p.siteId)
    if (self !== null) q = q.where('users.id', '=', self)
    const rows = await applyListQuery(q, USER_LIST, lq).execute()
    const page = toPage(rows, USER_LIST, lq, secret)
    return { ...page, items: page.items.map(toUserJson) }
  }

  /** GET /user: whoever is calling (a session's user or an API key's owner). */
  async current(p: Principal): Promise<UserJson> {
    if (!p.user) throw ERRORS.notFound('A site-wide API key belongs to no user')
    return this.get(p, p.user.id)
  }

  async get(p: Principal, id: number): Promise<UserJson> {
    return toUserJson(await this.visible(p, id))
  }

  /** POST /users (site admins) and `wharf users create`. */
  async create(p: Principal, input: CreateUserInput): Promise<UserJson> {
    requireSiteAdmin(p)
    const errors: ModelErrors = {}
    checkUsername(input.username, errors)
    if (input.password !== undefined) checkPassword(input.password, input.password_confirmation, errors)
    const email = checkEmail(input.email ?? null, errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    if (await this.usernameTaken(p.siteId, input.username)) throw taken()

    const now = this.now()
    const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null
    try {
      const row = await this.db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('users')
          .values({
            site_id: p.siteId,
            username: input.username,
            username_lower: input.username.toLowerCase(),
            password_hash: passwordHash,
            name: blankToNull(input.name ?? null),
            email,
            site_admin: bit(input.site_admin === true),
            self_managed: bit(input.self_managed !== false),
            disabled: bit(input.disabled === true),
            created_at: now,
            updated_at: now,
            last_login_at: null,
            password_set_at: passwordHash ? now : null,
          })
          .returningAll()
          .executeTakeFirstOrThrow()
        await recordAction(
          trx,
          contextOf(p),
          {
            action: 'user_create',
            display: `Created user ${inserted.username}${inserted.site_admin ? ' (site administrator)' : ''}`,
            targets: [{ type: 'user', id: inserted.id, name: inserted.username }],
          },
          now,
        )
        return inserted
      })
      return toUserJson(row)
    } catch (err) {
      if (isUniqueViolation(err)) throw taken()
      throw err
    }
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
    const admin = isSiteAdmin(p)
    const row = await this.visible(p, id)
    const shown = toUserJson(row)
    refuseChangedReadOnly(input, shown, READ_ONLY_FIELDS)
    const self = p.user?.id === row.id
    if (!admin) {
      // Unchanged values pass: the Files.com SDK's `save()` sends every attribute back.
      const current: Record<string, unknown> = {
        username: row.username,
        site_admin: row.site_admin === 1,
        self_managed: row.self_managed === 1,
        disabled: row.disabled === 1,
      }
      const refused = Object.keys(input).filter((k) => {
        const v = input[k as keyof UpdateUserInput]
        const readOnly = (READ_ONLY_FIELDS as readonly string[]).includes(k)
        return v !== undefined && !SELF_SERVICE_FIELDS.has(k) && !readOnly && v !== current[k]
      })
      if (refused.length) {
        throw ERRORS.siteAdminRequired(`Only site administrators can change ${refused.join(', ')}`)
      }
      if (input.password !== undefined && row.self_managed === 0) {
        throw ERRORS.selfManagedRequired(
          'The password of a Shared/Bot user is managed by site administrators',
        )
      }
    }

    const errors: ModelErrors = {}
    const patch: Partial<UserRow> = {}
    if (input.username !== undefined) {
      checkUsername(input.username, errors)
      if (input.username !== row.username) {
        patch.username = input.username
        patch.username_lower = input.username.toLowerCase()
      }
    }
    if (input.password !== undefined) checkPassword(input.password, input.password_confirmation, errors)
    if (input.name !== undefined && blankToNull(input.name) !== row.name) patch.name = blankToNull(input.name)
    if (input.email !== undefined) {
      const email = checkEmail(input.email, errors)
      if (email !== row.email) patch.email = email
    }
    if (input.site_admin !== undefined && bit(input.site_admin) !== row.site_admin) {
      if (self && !input.site_admin)
        addModelError(errors, 'site_admin', 'cannot be removed from your own user')
      patch.site_admin = bit(input.site_admin)
    }
    if (input.self_managed !== undefined && bit(input.self_managed) !== row.self_managed)
      patch.self_managed = bit(input.self_managed)
    if (input.disabled !== undefined && bit(input.disabled) !== row.disabled) {
      if (self && input.disabled) addModelError(errors, 'disabled', 'cannot be set on your own user')
      patch.disabled = bit(input.disabled)
    }
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    if (patch.username_lower !== undefined && patch.username_lower !== row.username_lower) {
      if (await this.usernameTaken(p.siteId, patch.username!)) throw taken()
    }

    const changed = Object.keys(patch).filter((k) => k !== 'username_lower')
    if (input.password !== undefined) {
      await this.sessions.reauthenticate(p, reauthentication)
      changed.push('password')
    }
    if (changed.length === 0) return toUserJson(row)

    const now = this.now()
    if (input.password !== undefined) {
      patch.password_hash = await hashPassword(input.password)
      patch.password_set_at = now
    }
    patch.updated_at = now
    try {
      const updated = await this.db.transaction().execute(async (trx) => {
        if (patch.site_admin === 0 || patch.disabled === 1) {
          const refusal: ModelErrors =
            patch.site_admin === 0
              ? {
                  site_admin: [
                    `cannot be removed from the last enabled site administrator: ${ANOTHER_ADMIN}`,
                  ],
                }
              : { disabled: [`cannot be set on the last enabled site administrator: ${ANOTHER_ADMIN}`] }
          await keepAnAdministrator(trx, p.siteId, row.id, ApiError.modelSave(refusal))
        }
        await trx.updateTable('users').set(patch).where('id', '=', row.id).execute()
        if (input.password !== undefined) await this.endSessionsAfterPasswordChange(trx, p, row.id)
        await recordAction(
          trx,
          contextOf(p),
          {
            action: 'user_update',
            display: `Updated user ${row.username} (${changed.join(', ')})`,
            targets: [{ type: 'user', id: row.id, name: patch.username ?? row.username }],
          },
          now,
        )
        return trx.selectFrom('users').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
      })
      this.identities.clear()
      return toUserJson(updated)
    } catch (err) {
      if (isUniqueViolation(err)) throw taken()
      throw err
    }
  }

  /** DELETE /users/{id}: site admins only, never themselves; through a session it needs reauthentication. */
  async remove(p: Principal, id: number, reauthentication?: string): Promise<void> {
    requireSiteAdmin(p)
    const row = await this.find(p.siteId, id)
    if (p.user?.id === row.id)
      throw ApiError.modelSave({ user: ['cannot delete itself: ask another site administrator'] })
    await this.sessions.reauthenticate(p, reauthentication)
    const now = this.now()
    await this.db.transaction().execute(async (trx) => {
      const refusal = {
        user: [`cannot be deleted while it is the last enabled site administrator: ${ANOTHER_ADMIN}`],
      }
      await keepAnAdministrator(trx, p.siteId, row.id, ApiError.modelSave(refusal))
      // Sessions, keys and folder permissions go with the user (foreign keys cascade); ending the
      // sessions explicitly keeps that true whatever the schema does later.
      await this.sessions.endAllFor(row.id, trx)
      await trx.deleteFrom('users').where('id', '=', row.id).execute()
      await recordAction(
        trx,
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
    const row = await this.db
      .selectFrom('users')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
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

  private async usernameTaken(siteId: number, username: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('users')
      .select('id')
      .where('site_id', '=', siteId)
      .where('username_lower', '=', username.toLowerCase())
      .executeTakeFirst()
    return row !== undefined
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
    await trx
      .deleteFrom('sessions')
      .where('user_id', '=', userId)
      .where('id_hash', '!=', p.sessionHash)
      .execute()
  }
}
