import type { Readable } from 'node:stream'
import type { Kysely } from 'kysely'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import type { ApiError } from '../../api/errors.js'
import type { Page } from '../../api/list-spec.js'
import type { Database } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { wakeMailWorkers } from '../../mail/mail-queue.js'
import { hmac, randomHex, safeEqual, tokenHash, verifyPassword } from '../../security/secrets.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { Download, DownloadService } from '../files/download-service.js'
import type { AccessView, FileAccess } from '../files/file-access.js'
import { type FileJson, toFileJson } from '../files/file-json.js'
import type { FileRepository, FileRow } from '../files/file-repository.js'
import type { FolderListQuery, FolderService } from '../files/folder-service.js'
import type { FileUploadPartJson } from '../files/upload-parts.js'
import type { UploadOptions, UploadService } from '../files/upload-service.js'
import type { LoginDefender } from '../login-defender/login-defender.js'
import type { UserRepository } from '../users/user-repository.js'
import { WRITING_PERMISSIONS } from './bundle-model.js'
import type { BundlePathJson, BundleRepository, BundleWithOwner } from './bundle-repository.js'
import {
  type BundleRegistrationJson,
  bundlePathNotFound,
  relativePath,
  renderRegistration,
  resolveSharePath,
  submissionFolder,
} from './bundle-visit-model.js'
import type { BundleRegistrationRow, BundleVisitRepository } from './bundle-visit-repository.js'

/** What a visitor sees of a share link before unlocking it. */
export interface PublicBundleJson {
  code: string
  description: string | null
  note: string | null
  permissions: string
  preview_only: boolean
  password_protected: boolean
  require_registration: boolean
  skip_name: boolean
  skip_email: boolean
  skip_company: boolean
  expires_at: string | null
  start_access_on_date: string | null
  /** true for write and read_write links. */
  can_upload: boolean
  dont_allow_folders_in_uploads: boolean
  /** The shared roots' names; only when the link needs neither a password nor a registration. */
  paths?: string[]
}

export interface RegistrationInput {
  password?: string | undefined
  name?: string | undefined
  email?: string | undefined
  company?: string | undefined
}

/** One visitor's request: their bundle and registration, and the creator they act through. */
export interface Visit {
  bundle: BundleWithOwner
  registration: BundleRegistrationRow
  shared: BundlePathJson[]
  /** The creator, through interface web from the visitor's address: whose permissions apply. */
  as: Principal
  access: AccessView
}

/** A ZIP's entries: each file with the path it has inside the ZIP. */
export interface ZipEntries {
  name: string
  visit: Visit
  entries: { row: FileRow; name: string }[]
  directories: string[]
}

const invalidCode = () => ERRORS.invalidBundleCode('This share link does not exist or is not available')
const codeFailed = () =>
  ERRORS.bundleRegistrationCodeFailed('X-Bundle-Registration-Code is missing or not one of this share link')
/** How long a share's download and ZIP links work: an hour, checked again against the link when used. */
const LINK_SECONDS = 3600
const MAX_ZIP_PATHS = 100

/**
 * Share links, their recipients' side (docs/decisions.md, "Share links (bundles)"): a visitor
 * registers (password, name, e-mail, company) and gets a registration code; with it they browse,
 * download and upload within the shared paths, through the creator's current permissions, as
 * interface web. Every refusal of a link itself is `invalid-bundle-code`, so codes cannot be probed.
 */
/**
 * Queues the mail telling the users a link's BundleNotifications name of a registration or an
 * upload, in the transaction that records it; the ids queued.
 */
export type VisitNotifier = (
  db: Kysely<Database>,
  input: {
    bundle: { id: number; site_id: number; code: string; description: string | null }
    event: 'registration' | 'upload'
    visitor: { name?: string | null; email?: string | null; company?: string | null; ip?: string | null }
    paths?: string[]
  },
) => Promise<number[]>

export class BundleVisitorService {
  constructor(
    private readonly bundles: BundleRepository,
    private readonly visits: BundleVisitRepository,
    private readonly users: UserRepository,
    private readonly files: FileRepository,
    private readonly fileAccess: FileAccess,
    private readonly folders: FolderService,
    private readonly downloads: DownloadService,
    private readonly uploads: UploadService,
    private readonly defender: LoginDefender,
    private readonly secrets: SiteSecrets,
    private readonly baseUrl: () => string,
    private readonly now: () => number = Date.now,
    /** Queues the mail of the link's BundleNotifications in the caller's transaction (none without SMTP). */
    private readonly notify: VisitNotifier = async () => [],
  ) {}

  /**
   * GET /public/bundles/{code}. The shared names come with it when the link needs neither a
   * password nor a registration, or when `regCode` is one of this link's registrations: a visitor
   * of a write-only link learns where to upload.
   */
  async show(siteId: number, code: string, regCode?: string): Promise<PublicBundleJson> {
    const bundle = await this.active(siteId, code)
    await this.refuseUsedUp(bundle)
    const json: PublicBundleJson = {
      code: bundle.code,
      description: bundle.description,
      note: bundle.note,
      permissions: bundle.permissions,
      preview_only: bundle.permissions === 'preview_only',
      password_protected: bundle.password_hash !== null,
      require_registration: bundle.require_registration === 1,
      skip_name: bundle.skip_name === 1,
      skip_email: bundle.skip_email === 1,
      skip_company: bundle.skip_company === 1,
      expires_at: formatDateTime(bundle.expires_at),
      start_access_on_date: formatDateTime(bundle.start_access_on_date),
      can_upload: WRITING_PERMISSIONS.has(bundle.permissions),
      dont_allow_folders_in_uploads: bundle.dont_allow_folders_in_uploads === 1,
    }
    const open = bundle.password_hash === null && bundle.require_registration !== 1
    const registration =
      !open && regCode ? await this.visits.findRegistrationByHash(tokenHash(regCode)) : undefined
    if (open || (registration && Number(registration.bundle_id) === bundle.id)) {
      json.paths = (await this.bundles.paths(bundle.id)).map((p) => p.path.slice(p.path.lastIndexOf('/') + 1))
    }
    return json
  }

  /**
   * POST /public/bundles/{code}/registrations: one visit. A wrong password counts against the
   * address and the link in the login defender; the visit is one use of `max_uses`.
   */
  async register(
    siteId: number,
    code: string,
    input: RegistrationInput,
    ip: string,
  ): Promise<BundleRegistrationJson> {
    const bundle = await this.active(siteId, code)
    await this.refuseUsedUp(bundle)
    if (bundle.password_hash !== null) {
      await this.defender.check(siteId, ip)
      await this.defender.check(siteId, linkKey(bundle.id))
      if (!(await verifyPassword(input.password ?? '', bundle.password_hash))) {
        await this.defender.recordFailure(siteId, ip, 'bundle_password')
        await this.defender.recordFailure(siteId, linkKey(bundle.id), 'bundle_password')
        throw ERRORS.invalidCredentials('The password of this share link is not right')
      }
    }
    const fields = registrationFields(bundle, input)
    const regCode = randomHex(20)
    let queued: number[] = []
    const row = await this.visits.transaction(async (tx) => {
      await tx.lockBundle(bundle.id)
      if (bundle.max_uses !== null && (await tx.countRegistrations(bundle.id)) >= bundle.max_uses) {
        throw usedUp()
      }
      const inserted = await tx.insertRegistration({
        site_id: siteId,
        bundle_id: bundle.id,
        code_hash: tokenHash(regCode),
        code_start: regCode.slice(0, 8),
        ...fields,
        ip,
        created_at: this.now(),
      })
      queued = await this.notify(tx.db, { bundle, event: 'registration', visitor: { ...fields, ip } })
      return inserted
    })
    if (queued.length > 0) wakeMailWorkers()
    return renderRegistration({ ...row, bundle_code: bundle.code }, regCode)
  }

  /** The visit a request with `X-Bundle-Registration-Code` makes. */
  async visit(siteId: number, code: string, regCode: string | undefined, ip: string): Promise<Visit> {
    const bundle = await this.active(siteId, code)
    const registration = regCode ? await this.visits.findRegistrationByHash(tokenHash(regCode)) : undefined
    if (!registration || Number(registration.bundle_id) !== bundle.id) throw codeFailed()
    return this.visitOf(bundle, registration, ip)
  }

  /** GET …/folders/{path}: the shared roots (no path), or a shared folder's contents. */
  async list(v: Visit, rawPath: string, query: FolderListQuery): Promise<Page<FileJson>> {
    if (v.bundle.permissions === 'write') return { items: [], next: null, prev: null }
    const target = resolveSharePath(rawPath, v.shared)
    if (!target) {
      const rows = await this.roots(v)
      return { items: rows.map((r) => this.render(v, r.row, r.root)), next: null, prev: null }
    }
    this.require(v, target.real, 'read')
    const row = await this.files.findByPath(v.as.siteId, target.real)
    if (!row) throw bundlePathNotFound(rawPath)
    if (row.type !== 'directory') throw ERRORS.folderMustNotBeAFile(`${rawPath} is a file, not a folder`)
    const page = await this.folders.listRows(v.as, target.real, query, v.access)
    return { ...page, items: page.items.map((r) => this.render(v, r, target.root)) }
  }

  /** GET …/files/{path}: the file, with a download_uri of its own (bound to the registration). */
  async file(v: Visit, rawPath: string): Promise<FileJson> {
    this.refuseDownloads(v)
    const target = resolveSharePath(rawPath, v.shared)
    if (!target) throw ERRORS.cannotDownloadDirectory('The share itself is not a file')
    this.require(v, target.real, 'read')
    const row = await this.files.findByPath(v.as.siteId, target.real)
    if (!row) throw bundlePathNotFound(rawPath)
    if (row.type === 'directory') throw ERRORS.cannotDownloadDirectory(`${rawPath} is a folder`)
    const token = await this.sign(v.as.siteId, {
      t: 'f',
      s: v.as.siteId,
      r: Number(v.registration.id),
      f: row.id,
      b: row.blob_key ?? '',
      e: Math.floor(this.now() / 1000) + LINK_SECONDS,
    })
    const uri = `${this.baseUrl()}/api/rest/v1/public/bundle_downloads/${token}/${encodeURIComponent(row.name)}`
    return this.render(v, row, target.root, uri)
  }

  /** GET /public/bundle_downloads/{token}/{name}: a file of a share, checked again now. */
  async fileDownload(token: string, ip: string): Promise<Download> {
    const claims = await this.verify(token, 'f')
    const v = await this.visitByRegistration(claims.s, claims.r, ip)
    this.refuseDownloads(v)
    const row = await this.files.findById(claims.s, claims.f!)
    if (row?.type !== 'file' || row.blob_key !== claims.b) {
      throw ERRORS.fileNotFound('The file has changed or been deleted since this link was made')
    }
    const root = this.rootOf(v, row.path)
    this.require(v, row.path, 'read')
    return this.asDownload(v, row, 'file', relativePath(row.path, root))
  }

  /** POST …/zip: a link to a ZIP of these share-relative paths, for the asking address only. */
  async zipLink(v: Visit, paths: string[]): Promise<{ download_uri: string }> {
    this.refuseDownloads(v)
    if (paths.length === 0) throw ERRORS.requestParamsRequired('paths must name at least one file or folder')
    if (paths.length > MAX_ZIP_PATHS) {
      throw ERRORS.requestParamsInvalid(`A ZIP takes at most ${MAX_ZIP_PATHS} paths`)
    }
    for (const p of paths) {
      const target = resolveSharePath(p, v.shared)
      if (target) this.require(v, target.real, 'read')
    }
    const token = await this.sign(v.as.siteId, {
      t: 'z',
      s: v.as.siteId,
      r: Number(v.registration.id),
      p: paths,
      ip: v.as.ip,
      e: Math.floor(this.now() / 1000) + LINK_SECONDS,
    })
    return { download_uri: `${this.baseUrl()}/api/rest/v1/public/bundle_zips/${token}/${v.bundle.code}.zip` }
  }

  /**
   * GET /public/bundle_zips/{token}/{name}: what the ZIP holds, every folder recursively, only
   * what the creator may read now. From another address than the one that asked: 403.
   */
  async zipEntries(token: string, ip: string): Promise<ZipEntries> {
    const claims = await this.verify(token, 'z')
    if (claims.ip !== ip) {
      throw ERRORS.zipDownloadIpMismatch('This ZIP link was made for another address')
    }
    const v = await this.visitByRegistration(claims.s, claims.r, ip)
    this.refuseDownloads(v)
    const entries: ZipEntries['entries'] = []
    const directories: string[] = []
    const seen = new Set<number>()
    // [""] (or any "" among the paths): the whole share.
    const targets = claims.p!.includes('')
      ? v.shared.map((sh) => ({ real: sh.path, root: sh.path }))
      : claims.p!.map((p) => resolveSharePath(p, v.shared)!)
    for (const target of targets) {
      this.require(v, target.real, 'read')
      const row = await this.files.findByPath(v.as.siteId, target.real)
      if (!row) throw bundlePathNotFound(relativePath(target.real, target.root))
      const rows =
        row.type === 'directory'
          ? [row, ...(await this.files.descendants(v.as.siteId, row.path_lower).selectAll().execute())]
          : [row]
      for (const r of rows) {
        if (seen.has(r.id) || !v.access.can(r.path, 'read')) continue
        seen.add(r.id)
        const name = relativePath(r.path, target.root)
        if (r.type === 'directory') directories.push(`${name}/`)
        else entries.push({ row: r, name })
      }
    }
    return { name: `${v.bundle.code}.zip`, visit: v, entries, directories }
  }

  /** Records ZIP entries as they are read, in one transaction: a `read` Action and a BundleDownload (full_zip) each. */
  async recordZipEntries(z: ZipEntries, entries: ZipEntries['entries'], ip: string): Promise<void> {
    await this.downloads.recordReads(
      entries.map((entry) => this.asDownload(z.visit, entry.row, 'full_zip', entry.name)),
      ip,
    )
  }

  /** The bytes of a ZIP entry. */
  open(row: FileRow): Promise<Readable> {
    return this.downloads.open(row)
  }

  /** POST …/files/{path} action=put without a ref: opens an upload into the share. */
  async beginUpload(v: Visit, rawPath: string, opts: UploadOptions): Promise<FileUploadPartJson> {
    const real = this.uploadTarget(v, rawPath)
    const [first] = await this.uploads.begin(v.as, real, { ...opts, parts: undefined })
    return { ...first!, path: rawPath } as FileUploadPartJson
  }

  async continueUpload(
    v: Visit,
    rawPath: string,
    ref: string,
    opts: UploadOptions,
  ): Promise<FileUploadPartJson> {
    const real = this.uploadTarget(v, rawPath)
    const [part] = await this.uploads.continue(v.as, real, ref, { ...opts, parts: undefined })
    return { ...part!, path: rawPath } as FileUploadPartJson
  }

  async endUpload(v: Visit, rawPath: string, ref: string, opts: UploadOptions): Promise<FileJson> {
    const real = this.uploadTarget(v, rawPath)
    const reg = v.registration
    let queued: number[] = []
    const row = await this.uploads.finish(
      v.as,
      real,
      ref,
      {
        ...opts,
        recorder: {
          display: (_action, path) =>
            `Uploaded ${path} through share link ${v.bundle.code} by ${visitorName(reg)}`,
          alsoRecord: async (db, file, action, now) => {
            queued = await this.notify(db, {
              bundle: v.bundle,
              event: 'upload',
              visitor: { name: reg.name, email: reg.email, company: reg.company, ip: reg.ip },
              paths: [relativePath(file.path, this.rootOf(v, file.path))],
            })
            await this.visits.on(db).insertAction({
              site_id: v.as.siteId,
              bundle_id: v.bundle.id,
              bundle_registration_id: Number(reg.id),
              path: relativePath(file.path, this.rootOf(v, file.path)),
              action,
              source: null,
              destination: null,
              created_at: now,
            })
          },
        },
      },
      v.access,
    )
    if (queued.length > 0) wakeMailWorkers()
    return this.render(v, row, this.rootOf(v, row.path))
  }

  // ---------- internals ----------

  /** The real path of an upload: inside a shared folder, in the visitor's submission folder. */
  private uploadTarget(v: Visit, rawPath: string): string {
    if (!WRITING_PERMISSIONS.has(v.bundle.permissions)) {
      throw ERRORS.writePermissionRequired('This share link does not take uploads')
    }
    const target = resolveSharePath(rawPath, v.shared)
    if (!target || target.real.toLowerCase() === target.root.toLowerCase()) {
      throw ERRORS.bundleOperationRequiresSubfolder(
        'Uploads go into a shared folder: name the file inside it',
      )
    }
    const inside = target.real.slice(target.root.length + 1)
    if (v.bundle.dont_allow_folders_in_uploads === 1 && inside.includes('/')) {
      throw ERRORS.bundleOperationRequiresSubfolder('This share link takes files, not folders')
    }
    // The registration's time, not the request's: every step of one upload names the same folder.
    const folder = submissionFolder(v.bundle, v.registration, v.registration.created_at)
    const real = folder === '' ? target.real : `${target.root}/${folder}/${inside}`
    this.require(v, target.root, 'write')
    this.require(v, real, 'write')
    return real
  }

  private refuseDownloads(v: Visit): void {
    if (v.bundle.permissions === 'write') {
      throw ERRORS.readPermissionRequired('This share link takes uploads only')
    }
    if (v.bundle.permissions === 'preview_only') {
      throw ERRORS.bundleOnlyAllowsPreviews('This share link allows previews only')
    }
  }

  /** The creator's current permission, or 404 bundle-path-not-found: the share no longer covers it. */
  private require(v: Visit, real: string, cap: 'read' | 'write'): void {
    this.rootOf(v, real)
    if (!v.access.can(real, cap)) throw bundlePathNotFound('')
  }

  /** The shared path `real` lies in. */
  private rootOf(v: Visit, real: string): string {
    const lower = real.toLowerCase()
    const root = v.shared.find(
      (s) => lower === s.path.toLowerCase() || lower.startsWith(`${s.path.toLowerCase()}/`),
    )
    if (!root) throw bundlePathNotFound('')
    return root.path
  }

  private async roots(v: Visit): Promise<{ row: FileRow; root: string }[]> {
    const out: { row: FileRow; root: string }[] = []
    for (const s of v.shared) {
      if (!v.access.can(s.path, 'read')) continue
      const row = await this.files.findByPath(v.as.siteId, s.path)
      if (row) out.push({ row, root: s.path })
    }
    return out
  }

  private render(v: Visit, row: FileRow, root: string, uri?: string): FileJson {
    const json = toFileJson(row, v.access, uri)
    const writable = WRITING_PERMISSIONS.has(v.bundle.permissions)
    return {
      ...json,
      path: relativePath(row.path, root),
      permissions: v.bundle.permissions === 'write' ? 'w' : writable ? 'rwl' : 'rl',
    }
  }

  private asDownload(v: Visit, row: FileRow, method: 'file' | 'full_zip', shown: string): Download {
    const reg = v.registration
    return {
      row,
      reader: {
        siteId: v.as.siteId,
        userId: v.as.user?.id ?? null,
        username: v.as.user?.username ?? null,
        interface: 'web',
      },
      display: `Downloaded ${row.path} through share link ${v.bundle.code} by ${visitorName(reg)}`,
      alsoRecord: async (db, now) => {
        await this.visits.on(db).insertDownload({
          site_id: v.as.siteId,
          bundle_id: v.bundle.id,
          bundle_registration_id: Number(reg.id),
          path: shown,
          download_method: method,
          created_at: now,
        })
      },
    }
  }

  private async visitByRegistration(siteId: number, regId: number, ip: string): Promise<Visit> {
    const registration = await this.visits.findRegistration(siteId, regId)
    if (!registration) throw invalidCode()
    const bundle = await this.bundles.find(siteId, Number(registration.bundle_id))
    if (!bundle || !this.isOpen(bundle)) throw invalidCode()
    return this.visitOf(bundle, registration, ip)
  }

  private async visitOf(
    bundle: BundleWithOwner,
    registration: BundleRegistrationRow,
    ip: string,
  ): Promise<Visit> {
    const creator = bundle.user_id === null ? null : await this.users.find(bundle.site_id, bundle.user_id)
    if (bundle.user_id !== null && (!creator || creator.disabled === 1)) throw invalidCode()
    const as: Principal = {
      siteId: bundle.site_id,
      user: creator ?? null,
      apiKey: null,
      sessionHash: null,
      permissionSet: 'full',
      ip,
      interface: 'web',
    }
    return {
      bundle,
      registration,
      shared: await this.bundles.paths(bundle.id),
      as,
      access: await this.fileAccess.of(as),
    }
  }

  /** The bundle of this code if it may be used now; else 422 invalid-bundle-code. */
  private async active(siteId: number, code: string): Promise<BundleWithOwner> {
    const bundle = await this.bundles.findByCode(siteId, code)
    if (!bundle || !this.isOpen(bundle)) throw invalidCode()
    return bundle
  }

  /** In its dates, and its creator not disabled (a disabled user's links rest until re-enabled). */
  private isOpen(b: BundleWithOwner): boolean {
    const now = this.now()
    return (
      b.owner_disabled !== 1 &&
      (b.expires_at === null || b.expires_at > now) &&
      (b.start_access_on_date === null || b.start_access_on_date <= now)
    )
  }

  private async refuseUsedUp(bundle: BundleWithOwner): Promise<void> {
    if (bundle.max_uses !== null && (await this.visits.countRegistrations(bundle.id)) >= bundle.max_uses) {
      throw usedUp()
    }
  }

  private async sign(siteId: number, claims: LinkClaims): Promise<string> {
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
    return `${payload}~${hmac(await this.secrets.signingSecret(siteId), `bundle-link:${payload}`)}`
  }

  private async verify(token: string, kind: 'f' | 'z'): Promise<LinkClaims> {
    const sep = token.lastIndexOf('~')
    let claims: LinkClaims
    try {
      claims = JSON.parse(Buffer.from(token.slice(0, sep), 'base64url').toString('utf8')) as LinkClaims
    } catch {
      throw invalidLink()
    }
    if (
      sep <= 0 ||
      claims?.t !== kind ||
      !Number.isSafeInteger(claims.s) ||
      !Number.isSafeInteger(claims.r)
    ) {
      throw invalidLink()
    }
    const secret = await this.secrets.signingSecret(claims.s).catch(() => null)
    if (
      secret === null ||
      !safeEqual(token.slice(sep + 1), hmac(secret, `bundle-link:${token.slice(0, sep)}`))
    ) {
      throw invalidLink()
    }
    if (claims.e * 1000 <= this.now()) throw invalidLink()
    return claims
  }
}

/** What a share link's download or ZIP link carries. */
interface LinkClaims {
  /** f: one file, z: a ZIP */
  t: 'f' | 'z'
  s: number
  /** registration id */
  r: number
  f?: number
  b?: string
  p?: string[]
  ip?: string
  e: number
}

const invalidLink = (): ApiError => ERRORS.invalidOrExpiredCode('This link is invalid or has expired')
const usedUp = (): ApiError =>
  ERRORS.bundleMaximumUsesReached('This share link has been used as often as it may be')

/** The login defender's key for a share link's wrong passwords. */
function linkKey(bundleId: number): string {
  return `bundle:${bundleId}`
}

function visitorName(reg: BundleRegistrationRow): string {
  return reg.name || reg.email || reg.company || `visitor ${reg.code_start}`
}

/** The registration's fields: required ones (unless skipped) when the link requires registration. */
function registrationFields(bundle: BundleWithOwner, input: RegistrationInput) {
  const out = {
    name: input.name?.trim() || null,
    email: input.email?.trim() || null,
    company: input.company?.trim() || null,
  }
  if (bundle.require_registration === 1) {
    const missing: string[] = []
    if (bundle.skip_name !== 1 && !out.name) missing.push('name')
    if (bundle.skip_email !== 1 && !out.email) missing.push('email')
    if (bundle.skip_company !== 1 && !out.company) missing.push('company')
    if (missing.length > 0) {
      throw ERRORS.requestParamsRequired(`This share link asks for ${missing.join(', ')}`)
    }
  }
  return out
}
