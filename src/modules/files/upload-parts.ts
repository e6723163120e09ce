import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { type BlobStore, BlobTooLargeError, type Exclusive, StagedPartError } from '../../blobs/blob-store.js'
import { checkUploadPartSignature, parseExpiry, uploadPartUrl } from '../../security/signed-link.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { ModuleSettings } from '../settings.js'
import { ContentMd5Mismatch, Md5Check, parseContentMd5 } from './content-md5.js'
import type { UploadRepository, UploadRow } from './upload-repository.js'

export type { UploadRow } from './upload-repository.js'

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
    private readonly uploads: UploadRepository,
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

  /**
   * The expiry a request about the upload pushes it back to, or null when the stored one is
   * already as late but for a moment (1% of the lifetime, at most 10 s): a busy upload asks for
   * part URLs many times a second, right after its parts pushed the expiry back, and rewriting
   * the row each time would cost a write (and on PostgreSQL a commit waiting for the disk) per
   * part for nothing.
   */
  extendedExpiry(now: number, upload: Pick<UploadRow, 'expiry_seconds' | 'expires_at'>): number | null {
    const expiresAt = this.expiresAt(now, upload)
    const slack = Math.min(10_000, (expiresAt - now) / 100)
    return expiresAt - upload.expires_at > slack ? expiresAt : null
  }

  /**
   * Part `part` of an upload, for a REST client: sent straight to the blob store where it takes
   * parts directly (a presigned URL), else to Wharf's own signed URL. Both expire alike.
   */
  async describe(
    upload: Pick<UploadRow, 'site_id' | 'ref' | 'path'>,
    part: number,
    askAboutOverwrites: boolean,
  ): Promise<FileUploadPartJson> {
    const { partSize, uploadUrlSeconds } = this.config.files
    const expires = Math.floor(this.now() / 1000) + uploadUrlSeconds
    const uri = this.blobs.directPartUrl
      ? await this.blobs.directPartUrl(upload.ref, part, uploadUrlSeconds)
      : uploadPartUrl(
          this.config.baseUrl,
          await this.secrets.signingSecret(upload.site_id),
          upload.site_id,
          upload.ref,
          part,
          expires,
        )
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
      upload_uri: uri,
    }
  }

  /**
   * Runs work holding the upload's row lock (PostgreSQL), so that processes sharing the database
   * run it one after the other for one upload; 404 once the upload is gone.
   */
  private underUploadLock(uploadId: number): Exclusive {
    return (work) =>
      this.uploads.transaction(async (tx) => {
        if (!(await tx.lock(uploadId))) throw uploadNotFound()
        return work()
      })
  }

  /**
   * `PUT upload_uri`: checks the link before reading a byte, then stores the part (`store`).
   * With `contentMd5` (the request's `Content-MD5` header) the part's md5 is computed as it
   * streams in, and a part whose bytes do not match is refused whole (400 invalid-body); without
   * it nothing is hashed here.
   */
  async receive(
    ref: string,
    part: number,
    link: { expires?: string | undefined; signature?: string | undefined },
    data: Readable,
    declaredLength: number | undefined,
    contentMd5?: string,
  ): Promise<void> {
    const now = this.now()
    const expires = parseExpiry(link.expires, now)
    const upload = await this.uploads.findByRef(ref)
    if (!upload || upload.expires_at <= now) throw uploadNotFound()
    const secret = await this.secrets.signingSecret(upload.site_id)
    checkUploadPartSignature(secret, upload.site_id, ref, part, expires, link.signature ?? '')
    await this.store({ ...upload, ref }, part, data, { declaredLength, contentMd5 })
  }

  /**
   * Stages part `part` of an upload already known to be the caller's (the signed route checked
   * its link; a protocol writer opened it), an aborted or oversized body leaving nothing behind,
   * then records it and pushes the upload's expiry back. 404 if the upload ended or was
   * abandoned meanwhile.
   */
  async store(
    upload: Pick<UploadRow, 'id' | 'ref' | 'expiry_seconds'>,
    part: number,
    data: Readable,
    opts: { declaredLength?: number | undefined; contentMd5?: string | undefined } = {},
  ): Promise<void> {
    const { declaredLength, contentMd5 } = opts
    const { ref } = upload
    if (declaredLength !== undefined && declaredLength > MAX_PART_BYTES) throw partTooLarge()
    let input = data
    if (contentMd5 !== undefined) {
      const expected = parseContentMd5(contentMd5)
      if (!expected) {
        throw ERRORS.requestParamsInvalid("Content-MD5 must be the base64 form of the body's 16-byte md5")
      }
      const check = new Md5Check(expected)
      // Either side failing destroys the other: the store sees the body's errors and its own.
      pipeline(data, check).catch(() => undefined)
      input = check
    }

    let size: number
    try {
      ;({ size } = await this.blobs.putPart(ref, part, input, {
        maxBytes: MAX_PART_BYTES,
        ...(declaredLength !== undefined ? { length: declaredLength } : {}),
        ...(this.uploads.dialect.singleProcess ? {} : { exclusive: this.underUploadLock(upload.id) }),
      }))
    } catch (err) {
      if (err instanceof BlobTooLargeError) throw partTooLarge()
      // The store's own upload was completed or given up while the part arrived.
      if (err instanceof StagedPartError) throw uploadNotFound()
      if (err instanceof ContentMd5Mismatch) {
        throw ERRORS.invalidBody(
          `The part's bytes do not match its Content-MD5 header (their md5 is ${err.actual}); nothing was kept`,
        )
      }
      throw err
    }

    const done = this.now()
    const recorded = await this.uploads.recordPart({
      uploadId: upload.id,
      number: part,
      size,
      now: done,
      expiresAt: this.expiresAt(done, upload),
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
