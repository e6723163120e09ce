import type { Readable } from 'node:stream'
import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { normalizePath } from '../../api/paths.js'
import {
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type ReadOptions,
} from '../../blobs/blob-store.js'
import type { Database } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { metrics } from '../../metrics/metrics.js'
import { readDownloadToken, signDownloadToken, verifyDownloadToken } from '../../security/signed-link.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { type ActionContext, contextOf, recordAction } from '../actions/action-recorder.js'
import { HeldActions } from '../actions/held-actions.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'
import type { AccessView, FileAccess } from './file-access.js'
import { describeFileAction } from './file-display.js'
import { type FileJson, toFileJson } from './file-json.js'
import { type FileRepository, type FileRow, fileTargets } from './file-repository.js'

/** A file whose bytes are about to be served, and whom to record the read for. */
export interface Download {
  row: FileRow
  /**
   * Who reads, for the `read` Action (ip filled in by the route). A username left undefined is
   * looked up only if a read is recorded: most pieces of a ranged download record none.
   */
  reader: Omit<ActionContext, 'ip' | 'username'> & { username?: string | null }
  /** The `read` Action's words, when a front end has its own (a share link names its visitor). */
  display?: string
  /** What else commits with the `read` Action (a share link's own download record). */
  alsoRecord?: (db: Kysely<Database>, now: number) => Promise<void>
}

const fileNotFound = (message: string) => ERRORS.fileNotFound(message)
const noSuchFile = (path: string) => fileNotFound(`No file at ${path}`)

/**
 * Reading files: metadata, signed download links, and the bytes behind them. Metadata lookups
 * record nothing; a `read` Action is recorded when bytes are served (decisions.md).
 */
export class DownloadService {
  constructor(
    private readonly files: FileRepository,
    private readonly users: UserRepository,
    private readonly blobs: BlobStore,
    private readonly secrets: SiteSecrets,
    private readonly fileAccess: FileAccess,
    private readonly config: ModuleSettings,
    private readonly now: () => number,
    /** Read Actions that wait for storage to have room again. */
    readonly heldReads: HeldActions = new HeldActions(),
  ) {}

  /** GET /files/{path}: the File, with a fresh download_uri unless `stat` only was asked for. */
  async find(p: Principal, rawPath: string, withLink: boolean): Promise<FileJson> {
    const path = normalizePath(rawPath)
    const access = await this.fileAccess.of(p)
    access.require(path, 'read')
    const row = await this.files.findByPath(p.siteId, path)
    const file = this.downloadable(row, path)
    const link = withLink ? await this.downloadUri(p, file) : undefined
    if (link && this.blobs.directDownloadUrl) {
      // The store serves the bytes without Wharf, which never sees the download: the read is
      // recorded as the link is handed out, as the spec logs a download unless action=stat.
      const { ip, ...reader } = contextOf(p)
      await this.recordRead({ row: file, reader }, ip)
    }
    return toFileJson(file, access, link)
  }

  /** GET /file_actions/metadata/{path}: a file or a folder, without a link. */
  async metadata(p: Principal, rawPath: string): Promise<FileJson> {
    const access = await this.fileAccess.of(p)
    return toFileJson(await this.stat(p, rawPath, access), access)
  }

  /** `metadata` for every front end: the row. `access` is the caller's, when already read. */
  async stat(p: Principal, rawPath: string, access?: AccessView): Promise<FileRow> {
    const path = normalizePath(rawPath)
    ;(access ?? (await this.fileAccess.of(p))).requireAny(path, ['read', 'list'])
    const row = path === '' ? undefined : await this.files.findByPath(p.siteId, path)
    if (!row) throw path === '' ? fileNotFound('The root folder has no metadata record') : noSuchFile(path)
    return row
  }

  /** POST /resources/download: a file named by path or id, read by the caller. */
  async forCaller(
    p: Principal,
    by: { path?: string | undefined; id?: number | undefined },
  ): Promise<Download> {
    let row: FileRow | undefined
    let path: string
    if (by.id !== undefined) {
      row = await this.files.findById(p.siteId, by.id)
      if (!row) throw fileNotFound(`No file with id ${by.id}`)
      path = row.path
    } else {
      path = normalizePath(by.path ?? '')
    }
    ;(await this.fileAccess.of(p)).require(path, 'read')
    if (by.id === undefined) row = await this.files.findByPath(p.siteId, path)
    const { ip: _ip, ...reader } = contextOf(p)
    return { row: this.downloadable(row, path), reader }
  }

  /**
   * GET /downloads/{token}/{name}: the link must be signed by the site, unexpired, and still name
   * the bytes it was made for; a file replaced or deleted since is 404.
   */
  async forLink(token: string): Promise<Download> {
    const t = readDownloadToken(token)
    verifyDownloadToken(await this.secrets.signingSecret(t.claims.s), t, this.now())
    const { claims } = t
    const row = await this.files.findById(claims.s, claims.f)
    if (claims.w !== undefined && row?.type === 'file') {
      // A file-aware webhook's link: the version its notification names, even if replaced since.
      const version = await notifiedVersion(this.files, claims.s, claims.w)
      if (version?.blobKey === claims.b) {
        const same = row.blob_key === claims.b
        return {
          row: same
            ? row
            : { ...row, blob_key: claims.b, size: version.size, md5: null, crc32: null, sha256: null },
          reader: { siteId: claims.s, userId: claims.u, interface: claims.i },
        }
      }
    }
    if (row?.type !== 'file' || row.blob_key !== claims.b) {
      throw fileNotFound('The file has changed or been deleted since this link was made')
    }
    return { row, reader: { siteId: claims.s, userId: claims.u, interface: claims.i } }
  }

  /**
   * The file's bytes, or a range of them; counted in the metrics of `iface` once read to the
   * end (a read that reaches the file's last byte counts as one download).
   */
  async open(
    row: FileRow,
    range?: ByteRange,
    opts?: ReadOptions,
    iface: string | null = null,
  ): Promise<Readable> {
    try {
      const stream = await this.blobs.open(row.blob_key ?? '', range, opts)
      const start = range?.start ?? 0
      const end = range?.end ?? row.size - 1
      stream.once('end', () => metrics.transferred(iface, 'down', end - start + 1, end >= row.size - 1))
      return stream
    } catch (err) {
      // Replaced or deleted between the lookup and now: the janitor took the old bytes.
      if (err instanceof BlobNotFoundError) throw noSuchFile(row.path)
      throw err
    }
  }

  /**
   * The `read` Action of a download, in its own transaction (nothing else changes). When storage
   * is full it is held and written later (held-actions.ts): the download goes ahead.
   */
  async recordRead(d: Download, ip: string | null): Promise<void> {
    await this.recordReads([d], ip)
  }

  /**
   * The `read` Actions of several downloads (the files of a ZIP as it reaches them), committed
   * together: one transaction for the lot rather than one each.
   */
  async recordReads(ds: Download[], ip: string | null): Promise<void> {
    if (ds.length === 0) return
    const now = this.now()
    const names = new Map<number, string | null>()
    const contexts: ActionContext[] = []
    for (const d of ds) {
      const { userId, siteId } = d.reader
      let username = d.reader.username
      if (username === undefined && userId !== null) {
        if (!names.has(userId)) {
          names.set(userId, (await this.users.findByIdOrName(siteId, userId, undefined))?.username ?? null)
        }
        username = names.get(userId)
      }
      contexts.push({ ...d.reader, username: username ?? null, ip })
    }
    await this.heldReads.write(() =>
      this.files.transaction(async (tx) => {
        for (const [i, d] of ds.entries()) {
          await recordAction(
            tx.db,
            contexts[i]!,
            {
              action: 'read',
              display: d.display ?? describeFileAction('read', d.row.path, 'file'),
              path: d.row.path,
              targets: fileTargets(d.row),
            },
            now,
          )
          await d.alsoRecord?.(tx.db, now)
        }
      }),
    )
  }

  private downloadable(row: FileRow | undefined, path: string): FileRow {
    if (path === '' || row?.type === 'directory') {
      throw ERRORS.cannotDownloadDirectory(`${path || 'The root'} is a folder`)
    }
    if (!row) throw noSuchFile(path)
    return row
  }

  /**
   * `${BASE_URL}/api/rest/v1/downloads/<token>/<name>`, valid DOWNLOAD_URL_SECONDS; or, where the
   * blob store serves bytes itself, its own link to the blob, valid as long.
   */
  private async downloadUri(p: Principal, row: FileRow): Promise<string> {
    const { downloadUrlSeconds } = this.config.files
    if (this.blobs.directDownloadUrl && row.blob_key) {
      return this.blobs.directDownloadUrl(row.blob_key, { fileName: row.name, expiresIn: downloadUrlSeconds })
    }
    const token = signDownloadToken(await this.secrets.signingSecret(p.siteId), {
      s: p.siteId,
      f: row.id,
      b: row.blob_key ?? '',
      u: p.user?.id ?? null,
      k: p.apiKey?.id ?? null,
      i: p.interface,
      e: Math.floor(this.now() / 1000) + downloadUrlSeconds,
    })
    return `${this.config.baseUrl}/api/rest/v1/downloads/${token}/${encodeURIComponent(row.name)}`
  }
}

/** The file version a webhook notification was fixed to (file-aware endpoints), if any. */
async function notifiedVersion(
  files: FileRepository,
  siteId: number,
  notificationId: number,
): Promise<{ blobKey: string; size: number } | undefined> {
  const n = await files.db
    .selectFrom('webhook_notifications')
    .select(['file_blob_key', 'file_size'])
    .where('site_id', '=', siteId)
    .where('id', '=', notificationId)
    .executeTakeFirst()
  if (!n?.file_blob_key) return undefined
  return { blobKey: n.file_blob_key, size: Number(n.file_size ?? 0) }
}
