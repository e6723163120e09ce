import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { normalizePath } from '../../api/paths.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { isUniqueViolation } from '../../db/errors.js'
import { isSiteAdmin, type Principal, type UserRow } from '../../identity/principal.js'
import { hashPassword, randomHex } from '../../security/secrets.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { FileAccess } from '../files/file-access.js'
import { readListRequest } from '../list-request.js'
import type { UserRepository } from '../users/user-repository.js'
import {
  BUNDLE_LIST,
  type BundleJson,
  type BundlePathJson,
  type BundleSettingsInput,
  bundleSettings,
  type CreateBundleInput,
  checkDates,
  READ_ONLY_FIELDS,
  renderBundle,
  WRITING_PERMISSIONS,
} from './bundle-model.js'
import type { BundleRepository, BundleRow, BundleWithOwner } from './bundle-repository.js'

export type { BundleJson, BundleSettingsInput, CreateBundleInput } from './bundle-model.js'

const notFound = (id: number) => ERRORS.notFound(`Bundle ${id} not found`)
const codeTaken = () => ApiError.modelSave({ code: ['has already been taken'] })

/**
 * Share links, their owners' side: site admins manage every bundle, other users their own, and
 * may create one only with `attachments_permission`. A bundle shares paths its creator can read
 * when it is saved; whether they still can is checked again when someone opens the link.
 */
export class BundleService {
  constructor(
    private readonly repo: BundleRepository,
    private readonly users: UserRepository,
    private readonly fileAccess: FileAccess,
    private readonly secrets: SiteSecrets,
    private readonly baseUrl: () => string,
    private readonly now: () => number = Date.now,
  ) {}

  /** GET /bundles. `user_id` omitted: a site admin sees every bundle, anyone else their own. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<BundleJson>> {
    const userId = this.listOwner(p, query['user_id'] as number | undefined)
    const list = await readListRequest(this.secrets, p.siteId, BUNDLE_LIST, query, {
      user_id: userId ?? 'all',
    })
    return mapPage(await this.repo.page(p.siteId, userId, list), (r) => renderBundle(r, this.baseUrl()))
  }

  async get(p: Principal, id: number): Promise<BundleJson> {
    return this.withPaths(await this.visible(p, id))
  }

  async create(p: Principal, input: CreateBundleInput): Promise<BundleJson> {
    refuseAppKeys(p)
    const owner = await this.owner(p, input.user_id)
    if (!isSiteAdmin(p) && p.user?.attachments_permission !== 1) {
      throw ERRORS.notAllowedToCreateBundle(
        'You are not allowed to create share links: ask a site administrator',
      )
    }
    const errors: ModelErrors = {}
    const settings = bundleSettings(input, errors)
    const now = this.now()
    const row = {
      expires_at: settings.expires_at ?? null,
      start_access_on_date: settings.start_access_on_date ?? null,
    }
    checkDates(row, true, now, errors)
    const paths = normalizedPaths(input.paths, errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const permissions = settings.permissions ?? 'read'
    const shared = await this.checkPaths(p, owner, paths, permissions)

    const code = settings.code ?? randomHex(16)
    const password = input.password ? await hashPassword(input.password) : null
    let id: number
    try {
      id = await this.repo.transaction(async (tx) => {
        const inserted = await tx.insert({
          require_registration: 0,
          require_share_recipient: 0,
          skip_name: 0,
          skip_email: 0,
          skip_company: 0,
          dont_separate_submissions_by_folder: 0,
          send_email_receipt_to_uploader: 0,
          dont_allow_folders_in_uploads: 0,
          max_uses: null,
          description: null,
          note: null,
          path_template: null,
          path_template_time_zone: null,
          ...settings,
          ...row,
          site_id: p.siteId,
          user_id: owner?.id ?? null,
          api_key_id: p.apiKey?.id ?? null,
          code,
          code_lower: code.toLowerCase(),
          password_hash: password,
          permissions,
          created_at: now,
          updated_at: now,
        })
        await tx.setPaths(inserted, shared)
        return inserted
      })
    } catch (err) {
      if (isUniqueViolation(err)) throw codeTaken()
      throw err
    }
    return renderBundle(await this.repo.get(p.siteId, id), this.baseUrl(), shared)
  }

  /** PATCH /bundles/{id}: the settings given; the other fields (what `save()` sends back) must be as shown. */
  async update(p: Principal, id: number, input: BundleSettingsInput): Promise<BundleJson> {
    refuseAppKeys(p)
    const row = await this.visible(p, id)
    if (!isSiteAdmin(p) && p.user?.attachments_permission !== 1) {
      throw ERRORS.notAllowedToCreateBundle(
        'You are not allowed to change share links: ask a site administrator',
      )
    }
    refuseChangedReadOnly(input, renderBundle(row, this.baseUrl()), READ_ONLY_FIELDS)
    const errors: ModelErrors = {}
    const settings = bundleSettings(input, errors)
    const after = { ...row, ...settings }
    checkDates(
      after,
      settings.expires_at !== undefined && settings.expires_at !== row.expires_at,
      this.now(),
      errors,
    )
    const paths = input.paths === undefined ? undefined : normalizedPaths(input.paths, errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)

    const current = await this.repo.paths(row.id)
    let shared: BundlePathJson[] | undefined
    const newPaths = paths !== undefined && !samePaths(paths, current)
    if (newPaths || after.permissions !== row.permissions) {
      const owner = row.user_id === null ? null : ((await this.users.find(p.siteId, row.user_id)) ?? null)
      shared = await this.checkPaths(p, owner, paths ?? current.map((c) => c.path), after.permissions)
      if (!newPaths) shared = undefined
    }
    // The paths as they will be: shown without reading them again.
    const pathsAfter = shared ?? current
    const patch: Partial<BundleRow> = {}
    for (const [k, v] of Object.entries(settings) as [keyof BundleRow, never][]) {
      if (row[k] !== v) patch[k] = v
    }
    if (input.password !== undefined) {
      patch.password_hash = input.password ? await hashPassword(input.password) : null
    }
    if (Object.keys(patch).length === 0 && !shared) return renderBundle(row, this.baseUrl(), pathsAfter)
    patch.updated_at = this.now()
    try {
      await this.repo.transaction(async (tx) => {
        await tx.update(row.id, patch)
        if (shared) await tx.setPaths(row.id, shared)
      })
    } catch (err) {
      if (isUniqueViolation(err)) throw codeTaken()
      throw err
    }
    return renderBundle(await this.repo.get(p.siteId, row.id), this.baseUrl(), pathsAfter)
  }

  async remove(p: Principal, id: number): Promise<void> {
    refuseAppKeys(p)
    await this.repo.delete((await this.visible(p, id)).id)
  }

  // ---------- internals ----------

  private async withPaths(row: BundleWithOwner): Promise<BundleJson> {
    return renderBundle(row, this.baseUrl(), await this.repo.paths(row.id))
  }

  /** The bundle if the caller may see it: site admins see all, others only their own. */
  async visible(p: Principal, id: number): Promise<BundleWithOwner> {
    const row = await this.repo.find(p.siteId, id)
    // Another user's bundle is not shown to exist.
    if (!row || (!isSiteAdmin(p) && row.user_id !== p.user?.id)) throw notFound(id)
    return row
  }

  /** `user_id` as the route's schema validated it (an integer ≥ 0), or undefined. */
  private listOwner(p: Principal, n: number | undefined): number | undefined {
    if (n === undefined) return isSiteAdmin(p) ? undefined : p.user!.id
    if (n === 0) return p.user?.id
    if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can name another user_id')
    }
    return n
  }

  /** Whose bundle a create makes: the caller (null for a site-wide key), or a user a site admin names. */
  private async owner(p: Principal, n: number | undefined): Promise<UserRow | null> {
    if (n === undefined || n === 0 || n === p.user?.id) return p.user
    if (!isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can create share links for other users')
    }
    const user = await this.users.find(p.siteId, n)
    if (!user) throw ERRORS.userNotFound(`User ${n} not found`)
    return user
  }

  /**
   * Each path must exist, be within the caller's key restriction, and be readable by the
   * bundle's creator now (and writable, for a bundle that takes uploads). Returns the paths as
   * stored (their existing spelling).
   */
  private async checkPaths(
    p: Principal,
    owner: UserRow | null,
    paths: string[],
    permissions: string,
  ): Promise<BundlePathJson[]> {
    const caller = await this.fileAccess.of(p)
    const creator =
      owner === null || owner.id === p.user?.id
        ? caller
        : await this.fileAccess.of({ ...p, user: owner, apiKey: null })
    const caps = WRITING_PERMISSIONS.has(permissions) ? (['read', 'write'] as const) : (['read'] as const)
    for (const path of paths) {
      for (const cap of caps) {
        caller.require(path, cap)
        creator.require(path, cap)
      }
    }
    const found = await this.repo.existing(p.siteId, paths)
    return paths.map((path) => {
      const stored = found.get(path.toLowerCase())
      if (stored === undefined) throw ERRORS.bundlePathNotFound(`Path not found: ${path}`)
      return { recursive: true, path: stored }
    })
  }
}

/** App keys other than the desktop, sync and mobile apps' cannot manage share links. */
export function refuseAppKeys(p: Principal): void {
  if (p.permissionSet === 'office_integration') {
    throw ERRORS.apiKeyOnlyForOfficeIntegration(
      'This API key (permission set office_integration) cannot manage share links',
    )
  }
}

/** The paths normalized, each once (case-insensitively), in the order given; the root is refused. */
function normalizedPaths(raw: string[], errors: ModelErrors): string[] {
  const seen = new Set<string>()
  const out: string[] = []
  for (const r of raw) {
    const path = normalizePath(r, 'paths')
    if (path === '') {
      addModelError(errors, 'paths', 'must name files or folders, not the root folder')
      continue
    }
    if (seen.has(path.toLowerCase())) continue
    seen.add(path.toLowerCase())
    out.push(path)
  }
  if (raw.length === 0) addModelError(errors, 'paths', "can't be empty")
  return out
}

function samePaths(paths: string[], current: BundlePathJson[]): boolean {
  return (
    paths.length === current.length &&
    paths.every((p, i) => p.toLowerCase() === current[i]!.path.toLowerCase())
  )
}
