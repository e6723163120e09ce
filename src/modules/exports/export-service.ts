import type { Readable } from 'node:stream'
import { parse } from 'csv-parse'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { parsePerPage } from '../../api/list-query.js'
import { isWithin } from '../../api/paths.js'
import type { BlobStore } from '../../blobs/blob-store.js'
import type { ExportKindSpec, ParsedQuery } from '../../exports/export-kind.js'
import { EXPORT_KINDS } from '../../exports/export-kinds.js'
import { exportSignal } from '../../exports/export-worker.js'
import { timeRange } from '../../exports/query-fields.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import { openCursor, signCursor } from '../../security/signed-cursor.js'
import { invalidLink } from '../../security/signed-link.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { adminFolders } from '../permissions/permission-service.js'
import type { UserRepository } from '../users/user-repository.js'
import { checkExportResultsLink, exportResultsUrl } from './export-link.js'
import type { ExportRepository, ExportRow } from './export-repository.js'

/** Who an export is made or read for: the caller, or (site admins only) the user they name. */
interface Actor {
  userId: number | null
  siteAdmin: boolean
}

export interface ResultsQuery {
  id: number
  user_id?: number | undefined
  cursor?: string | undefined
  per_page?: string | undefined
}

export interface ResultsPage {
  items: Record<string, unknown>[]
  next: string | null
}

/**
 * Webhook-log and history exports: creating one (the row is the job; a worker builds it), showing
 * it, paging its results and serving its CSV. The JSON results are read from the CSV itself, so
 * both hold the same records whatever happens to the log or the history afterwards.
 */
export class ExportService {
  constructor(
    private readonly exports: ExportRepository,
    private readonly users: UserRepository,
    private readonly blobs: BlobStore,
    private readonly secrets: SiteSecrets,
    private readonly baseUrl: () => string,
    private readonly now: () => number = Date.now,
  ) {}

  async create(p: Principal, spec: ExportKindSpec, body: Record<string, unknown>) {
    const { start, end } = timeRange(body)
    const query = spec.parseQuery(body, this.exports.dialect)
    const actor = await this.actor(p, body['user_id'])
    await this.checkScope(p.siteId, actor, query)
    if (start !== null && end !== null && start > end) {
      throw ApiError.modelSave({ end_at: ['must not be earlier than start_at'] })
    }
    const now = this.now()
    const row = await this.exports.insert({
      site_id: p.siteId,
      kind: spec.kind,
      user_id: actor.userId,
      status: 'building',
      failure_reason: null,
      start_at: start,
      end_at: end,
      query: JSON.stringify(query.given),
      blob_key: null,
      result_bytes: null,
      result_count: null,
      lease_owner: null,
      lease_until: null,
      created_at: now,
      updated_at: now,
    })
    exportSignal.emit('created')
    return this.render(spec, row)
  }

  async get(p: Principal, spec: ExportKindSpec, id: number) {
    const actor = await this.actor(p, undefined)
    return this.render(spec, await this.visible(p, actor, spec, id))
  }

  /**
   * One page of a ready export's results, oldest record first. The cursor holds the byte offset
   * in the CSV where the next page starts: every page costs what the first one does.
   */
  async results(p: Principal, spec: ExportKindSpec, q: ResultsQuery): Promise<ResultsPage> {
    const perPage = parsePerPage(q.per_page)
    const actor = await this.actor(p, q.user_id)
    const row = await this.visible(p, actor, spec, q.id)
    if (row.status === 'building') {
      throw ERRORS.exportNotReady(`Export ${row.id} is still being built`)
    }
    if (row.status === 'failed' || row.blob_key === null) {
      throw ERRORS.exportFailure(`Export ${row.id} failed: ${row.failure_reason ?? 'no results'}`)
    }
    const secret = await this.secrets.signingSecret(p.siteId)
    const from = q.cursor ? this.readCursor(q.cursor, secret, row.id) : 0
    const size = Number(row.result_bytes ?? 0)
    if (from > size) throw ERRORS.invalidCursor('The cursor is not valid')
    const items: Record<string, unknown>[] = []
    let end = from
    if (from < size) {
      const source = await this.blobs.open(row.blob_key, { start: from, end: size - 1 })
      const parser = source.pipe(parse({ info: true }))
      let header = from === 0
      try {
        for await (const { record, info } of parser as AsyncIterable<{
          record: string[]
          info: { bytes: number }
        }>) {
          end = from + info.bytes
          if (header) {
            header = false
            continue
          }
          items.push(spec.fromCsv(record))
          if (items.length === perPage) break
        }
      } finally {
        source.destroy()
        parser.destroy()
      }
    }
    await spec.extendResults?.(this.exports.db, row.site_id, items)
    return { items, next: end < size ? this.makeCursor(secret, row.id, end) : null }
  }

  /** The CSV behind a `results_url`; anything wrong with the link (or the export gone) is 401. */
  async forLink(
    id: number,
    query: { expires?: string | undefined; signature?: string | undefined },
  ): Promise<{ stream: Readable; bytes: number; fileName: string }> {
    const row = await this.exports.findForLink(id)
    if (row?.status !== 'ready' || row.blob_key === null) throw invalidLink()
    const secret = await this.secrets.signingSecret(row.site_id)
    checkExportResultsLink(secret, row.site_id, id, query, this.now())
    const stream = await this.blobs.open(row.blob_key).catch(() => {
      throw invalidLink()
    })
    return {
      stream,
      bytes: Number(row.result_bytes ?? 0),
      fileName: `${EXPORT_KINDS[row.kind].fileName}-${id}.csv`,
    }
  }

  private async render(spec: ExportKindSpec, row: ExportRow): Promise<Record<string, unknown>> {
    const given = JSON.parse(row.query) as Record<string, unknown>
    const out: Record<string, unknown> = {
      id: row.id,
      [spec.versionField]: '1',
      start_at: formatDateTime(row.start_at),
      end_at: formatDateTime(row.end_at),
      status: row.status,
    }
    for (const f of spec.queryFields) out[f] = given[f] ?? null
    out['results_url'] =
      row.status === 'ready'
        ? exportResultsUrl(
            this.baseUrl(),
            await this.secrets.signingSecret(row.site_id),
            row.site_id,
            row.id,
            this.now(),
          )
        : null
    out['user_id'] = row.user_id
    out['failure_reason'] = row.status === 'failed' ? row.failure_reason : null
    out['results_count'] = row.status === 'ready' ? Number(row.result_count ?? 0) : null
    return out
  }

  /**
   * `user_id`: absent or 0 is the caller; another user is for site admins only, and makes the
   * request as that user (their limits apply).
   */
  private async actor(p: Principal, raw: unknown): Promise<Actor> {
    const self = { userId: p.user?.id ?? null, siteAdmin: isSiteAdmin(p) }
    if (raw === undefined || raw === null || raw === 0) return self
    const userId = Number(raw)
    if (userId === p.user?.id) return self
    if (!isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can name another user_id')
    }
    const user = await this.users.find(p.siteId, userId)
    if (!user) throw ERRORS.userNotFound(`User ${userId} not found`)
    return { userId: user.id, siteAdmin: user.site_admin === 1 }
  }

  /** Site admins query anything; anyone else by folder or path, inside folders they administer. */
  private async checkScope(siteId: number, actor: Actor, q: ParsedQuery): Promise<void> {
    if (actor.siteAdmin) return
    const named = [...q.folders, ...q.paths]
    if (named.length === 0) {
      throw ERRORS.nonAdminsMustQueryByFolderOrPath(
        'Only site administrators may export without query_folder or query_path',
      )
    }
    const administered =
      actor.userId === null ? [] : await adminFolders(this.exports.db, siteId, actor.userId)
    const outside = named.find((path) => !administered.some((f) => isWithin(path, f)))
    if (outside !== undefined) {
      throw ERRORS.folderAdminPermissionRequired(
        `Folder admin permission is required on ${outside === '' ? 'the root folder' : outside}`,
      )
    }
  }

  /**
   * The export if the actor may see it: site admins every export of the site, others their own,
   * as long as they still administer the folders and paths it names.
   */
  private async visible(p: Principal, actor: Actor, spec: ExportKindSpec, id: number): Promise<ExportRow> {
    const row = await this.exports.find(p.siteId, id, spec.kind)
    if (!row || (!actor.siteAdmin && row.user_id !== actor.userId)) {
      throw ERRORS.notFound(`No export with id ${id}`)
    }
    // A user who no longer administers what the export covers may no longer read it.
    if (!actor.siteAdmin) {
      const given = JSON.parse(row.query) as Record<string, unknown>
      await this.checkScope(p.siteId, actor, spec.parseQuery(given, this.exports.dialect))
    }
    return row
  }

  private makeCursor(secret: string, id: number, offset: number): string {
    return signCursor('export-cursor', { e: id, o: offset }, secret)
  }

  private readCursor(raw: string, secret: string, id: number): number {
    const c = openCursor('export-cursor', raw, secret) as { e: unknown; o: unknown }
    if (c.e !== id) throw ERRORS.invalidCursor('The cursor belongs to another export')
    if (!Number.isSafeInteger(c.o) || (c.o as number) < 0) {
      throw ERRORS.invalidCursor('The cursor is not valid')
    }
    return c.o as number
  }
}
