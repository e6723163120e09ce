import type { Readable } from 'node:stream'
import { ERRORS } from '../../api/error-factories.js'
import { normalizePath } from '../../api/paths.js'
import type { Interface, Principal } from '../../identity/principal.js'
import { hmac, safeEqual } from '../../security/secrets.js'
import { invalidLink } from '../../security/signed-link.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'
import type { Download, DownloadService } from './download-service.js'
import type { AccessView, FileAccess } from './file-access.js'
import type { FileRepository, FileRow } from './file-repository.js'

/** How many files and folders one ZIP may name (folders count once, whatever they hold). */
export const MAX_ZIP_PATHS = 100

/** What a ZIP holds: each file with its name inside the ZIP, the folders, and whom reads it. */
export interface ZipPlan {
  name: string
  entries: { row: FileRow; name: string }[]
  directories: string[]
  reader: Download['reader']
}

/** What a ZIP link carries: the caller (user, key's folder, interface), the paths, the address. */
interface ZipClaims {
  t: 'zip'
  s: number
  /** user id; null for a site-wide key */
  u: number | null
  /** the API key's folder restriction, if any */
  kp: string | null
  i: Interface
  p: string[]
  ip: string
  e: number
}

/**
 * A user's own files and folders as one ZIP: `POST /file_actions/zip_download` checks the caller
 * may read every path named and gives a link, valid as long as a download link and only from the
 * asking address; the link streams the ZIP, checking the user's permissions again then, each
 * folder recursively (what the user may not read inside it is left out), recording a `read`
 * Action per file as a download does.
 */
export class ZipDownloadService {
  constructor(
    private readonly files: FileRepository,
    private readonly users: UserRepository,
    private readonly fileAccess: FileAccess,
    private readonly downloads: DownloadService,
    private readonly secrets: SiteSecrets,
    private readonly config: ModuleSettings,
    private readonly now: () => number,
  ) {}

  /** POST /file_actions/zip_download */
  async link(p: Principal, rawPaths: string[]): Promise<{ download_uri: string }> {
    if (rawPaths.length === 0) {
      throw ERRORS.requestParamsRequired('paths must name at least one file or folder')
    }
    if (rawPaths.length > MAX_ZIP_PATHS) {
      throw ERRORS.requestParamsInvalid(`A ZIP takes at most ${MAX_ZIP_PATHS} paths`)
    }
    const paths = [...new Set(rawPaths.map((r) => normalizePath(r)))]
    const access = await this.fileAccess.of(p)
    await this.targets(p.siteId, paths, access)
    const claims: ZipClaims = {
      t: 'zip',
      s: p.siteId,
      u: p.user?.id ?? null,
      kp: p.apiKey?.path ? p.apiKey.path : null,
      i: p.interface,
      p: paths,
      ip: p.ip,
      e: Math.floor(this.now() / 1000) + this.config.files.downloadUrlSeconds,
    }
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
    const token = `${payload}~${hmac(await this.secrets.signingSecret(p.siteId), `zip-download:${payload}`)}`
    return {
      download_uri: `${this.config.baseUrl}/api/rest/v1/zip_downloads/${token}/${encodeURIComponent(zipName(paths))}`,
    }
  }

  /**
   * GET /zip_downloads/{token}/{name}: what the ZIP holds, read with the user's permissions as
   * they are now. From another address than the one that asked: 403.
   */
  async plan(token: string, ip: string): Promise<ZipPlan> {
    const claims = await this.verify(token)
    if (claims.ip !== ip) throw ERRORS.zipDownloadIpMismatch('This ZIP link was made for another address')
    const user = claims.u === null ? null : await this.users.findById(claims.u)
    if (claims.u !== null && (!user || user.site_id !== claims.s || user.disabled)) throw invalidLink()
    const access = await this.fileAccess.ofUser(claims.s, user ?? null, claims.kp)
    const rows = await this.targets(claims.s, claims.p, access)
    const base = commonParent(claims.p)
    const entries: ZipPlan['entries'] = []
    const directories: string[] = []
    const seen = new Set<number>()
    for (const row of rows) {
      const all =
        row === null || row.type === 'directory'
          ? [
              ...(row ? [row] : []),
              ...(await this.files
                .descendants(claims.s, row?.path_lower ?? '')
                .selectAll()
                .orderBy('path_lower')
                .execute()),
            ]
          : [row]
      for (const r of all) {
        if (seen.has(r.id) || !access.can(r.path, 'read')) continue
        seen.add(r.id)
        const name = base === '' ? r.path : r.path.slice(base.length + 1)
        if (r.type === 'directory') directories.push(`${name}/`)
        else entries.push({ row: r, name })
      }
    }
    return {
      name: zipName(claims.p),
      entries,
      directories,
      reader: { siteId: claims.s, userId: claims.u, interface: claims.i },
    }
  }

  /** The bytes of one file of the ZIP. */
  open(row: FileRow): Promise<Readable> {
    return this.downloads.open(row)
  }

  /** Records files of the ZIP as they are read, in one transaction: a `read` Action each, as a download would. */
  record(plan: ZipPlan, rows: FileRow[], ip: string): Promise<void> {
    return this.downloads.recordReads(
      rows.map((row) => ({ row, reader: plan.reader })),
      ip,
    )
  }

  /** Each path's row (null: the root folder), once the caller may read it and it exists. */
  private async targets(siteId: number, paths: string[], access: AccessView): Promise<(FileRow | null)[]> {
    const rows: (FileRow | null)[] = []
    for (const path of paths) {
      access.require(path, 'read')
      if (path === '') {
        rows.push(null)
        continue
      }
      const row = await this.files.findByPath(siteId, path)
      if (!row) throw ERRORS.fileNotFound(`No file or folder at ${path}`)
      rows.push(row)
    }
    return rows
  }

  private async verify(token: string): Promise<ZipClaims> {
    const sep = token.lastIndexOf('~')
    if (sep <= 0) throw invalidLink()
    let claims: ZipClaims
    try {
      claims = JSON.parse(Buffer.from(token.slice(0, sep), 'base64url').toString('utf8')) as ZipClaims
    } catch {
      throw invalidLink()
    }
    if (claims?.t !== 'zip' || !Number.isSafeInteger(claims.s) || !Array.isArray(claims.p))
      throw invalidLink()
    const secret = await this.secrets.signingSecret(claims.s).catch(() => null)
    if (
      secret === null ||
      !safeEqual(token.slice(sep + 1), hmac(secret, `zip-download:${token.slice(0, sep)}`))
    ) {
      throw invalidLink()
    }
    if (claims.e * 1000 <= this.now()) throw invalidLink()
    return claims
  }
}

const parentOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '')

/** The deepest folder holding every path: names inside the ZIP start below it. */
function commonParent(paths: string[]): string {
  let base = parentOf(paths[0] ?? '')
  for (const p of paths) {
    while (base !== '' && !p.toLowerCase().startsWith(`${base.toLowerCase()}/`)) {
      base = parentOf(base)
    }
  }
  return base
}

/** One path: its name; several: the folder holding them; the root: files. */
function zipName(paths: string[]): string {
  const one = paths.length === 1 ? paths[0]! : commonParent(paths)
  const last = one.slice(one.lastIndexOf('/') + 1)
  return `${last || 'files'}.zip`
}
