import type { Readable } from 'node:stream'
import type { Kysely, Selectable } from 'kysely'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { type BlobStore, BlobTooLargeError } from '../../blobs/blob-store.js'
import type { Database, UploadsTable } from '../../db/schema.js'
import type { ModuleSettings } from '../settings.js'
import type { SiteSecrets } from '../sites/site-secrets.js'
import { checkUploadPartSignature, parseExpiry, uploadPartUrl } from './signed-link.js'
import { extendUpload, findUploadByRef, upsertPart } from './upload-repository.js'

export type UploadRow = Selectable<UploadsTable>

/** Files.com's limits: parts are numbered 1…10000, and one part holds at most 5 GiB. */
export const MAX_PARTS = 10_000
export const MAX_PART_BYTES = 5 * 1024 ** 3

/** The FileUploadPart resource: where and how to send one part. */
export interface FileUploadPartJson {
  send: Record<string, string>
  action: string
  ask_about_overwrites: boolean
  available_parts: number
  expires: string
  headers: Record<string, string>
  http_method: string
  next_partsize: number
  parallel_parts: boolean
  retry_parts: boolean
  parameters: Record<string, string>
  part_number: number
  partsize: number
  path: string
  ref: string
  upload_uri: string
}

export const uploadNotFound = () =>
  ERRORS.fileUploadNotFound(
    'No such upload in progress: it was finished, abandoned, or started by someone else',
  )

/**
 * The unauthenticated half of an upload: signed part URLs and the bytes sent to them. Parts may
 * arrive in any order and in parallel; each is staged by the blob store and recorded in
 * upload_parts, and `action=end` assembles them.
 */
export class UploadParts {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly blobs: BlobStore,
    private readonly secrets: SiteSecrets,
    private readonly config: ModuleSettings,
    private readonly now: () => number,
  ) {}

  /**
   * How long an upload lives without activity; every request about it pushes this back. An
   * upload with a lifetime of its own (a protocol writer's) keeps it.
   */
  expiresAt(now: number, upload?: Pick<UploadRow, 'expiry_seconds'>): number {
    const seconds = upload?.expiry_seconds
    return now + (seconds ? seconds * 1000 : this.config.files.uploadExpiryMinutes * 60_000)
  }

  async describe(
    upload: Pick<UploadRow, 'site_id' | 'ref' | 'path'>,
    part: number,
    askAboutOverwrites: boolean,
  ): Promise<FileUploadPartJson> {
    const { partSize, uploadUrlSeconds } = this.config.files
    const expires = Math.floor(this.now() / 1000) + uploadUrlSeconds
    const secret = await this.secrets.signingSecret(upload.site_id)
    return {
      send: {},
      action: 'put/write',
      ask_about_overwrites: askAboutOverwrites,
      available_parts: MAX_PARTS,
      expires: formatDateTime(expires * 1000)!,
      headers: {},
      http_method: 'PUT',
      next_partsize: partSize,
      parallel_parts: true,
      retry_parts: true,
      parameters: {},
      part_number: part,
      partsize: partSize,
      path: upload.path,
      ref: upload.ref,
      upload_uri: uploadPartUrl(this.config.baseUrl, secret, upload.site_id, upload.ref, part, expires),
    }
  }

  /**
   * `PUT upload_uri`: checks the link before reading a byte, stages the part (an aborted or
   * oversized body leaves nothing behind), then records it.
   */
  async receive(
    ref: string,
    part: number,
    link: { expires?: string | undefined; signature?: string | undefined },
    data: Readable,
    declaredLength: number | undefined,
  ): Promise<void> {
    const now = this.now()
    const expires = parseExpiry(link.expires, now)
    const upload = await findUploadByRef(this.db, ref)
    if (!upload || upload.expires_at <= now) throw uploadNotFound()
    const secret = await this.secrets.signingSecret(upload.site_id)
    checkUploadPartSignature(secret, upload.site_id, ref, part, expires, link.signature ?? '')
    if (declaredLength !== undefined && declaredLength > MAX_PART_BYTES) throw partTooLarge()

    let size: number
    try {
      ;({ size } = await this.blobs.putPart(ref, part, data, { maxBytes: MAX_PART_BYTES }))
    } catch (err) {
      if (err instanceof BlobTooLargeError) throw partTooLarge()
      throw err
    }

    const done = this.now()
    const recorded = await this.db.transaction().execute(async (trx) => {
      // Touching the upload first also makes a concurrent `end` wait for this part (PostgreSQL).
      if (!(await extendUpload(trx, upload.id, this.expiresAt(done, upload)))) return false
      await upsertPart(trx, upload.id, part, size, done)
      return true
    })
    if (!recorded) {
      // Ended or abandoned while the bytes were arriving: nothing will ever assemble them.
      await this.blobs.discardUpload(ref).catch(() => undefined)
      throw uploadNotFound()
    }
  }
}

const partTooLarge = () =>
  ERRORS.invalidUploadPartSize(`An upload part may hold at most ${MAX_PART_BYTES} bytes (5 GiB)`)
