import { GetObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { contentDisposition } from '../../api/content-disposition.js'
import { partName, S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.js'

/** SigV4's longest validity for a presigned URL (7 days). */
const MAX_PRESIGNED_SECONDS = 604_800

export interface S3DirectBlobStoreOptions extends S3BlobStoreOptions {
  /** The clock presigned URLs are signed with (Wharf's own, so that both kinds of link agree). */
  now?: () => number
}

/**
 * The S3 store in direct mode: clients PUT parts to presigned `UploadPart` URLs of the upload's
 * S3 multipart upload (the one the proxy store streams parts of known length into), and download
 * from presigned `GetObject` URLs; Wharf only signs. Everything else (parts sent through Wharf by
 * the protocol front ends, the end of an upload, copies, exports) is the proxy store's.
 */
export class S3DirectBlobStore extends S3BlobStore {
  private readonly now: () => number

  constructor(opts: S3DirectBlobStoreOptions) {
    super(opts)
    this.now = opts.now ?? Date.now
  }

  async directPartUrl(ref: string, partNumber: number, expiresIn: number): Promise<string> {
    const n = Number(partName(partNumber))
    const target = await this.targets.open(ref)
    return getSignedUrl(
      this.place.client,
      new UploadPartCommand({
        ...this.targets.of(target),
        PartNumber: n,
      }),
      this.signing(expiresIn),
    )
  }

  async directDownloadUrl(key: string, opts: { fileName: string; expiresIn: number }): Promise<string> {
    return getSignedUrl(
      this.place.client,
      new GetObjectCommand({
        Bucket: this.place.bucket,
        Key: this.objectKey(key),
        ResponseContentDisposition: contentDisposition(opts.fileName),
      }),
      this.signing(opts.expiresIn),
    )
  }

  async directOrigins(): Promise<string[]> {
    // The SDK decides the host (path or virtual-host style, the region's endpoint): ask it.
    return [new URL(await this.directDownloadUrl('0'.repeat(32), { fileName: 'x', expiresIn: 1 })).origin]
  }

  /** Presigned for `expiresIn` seconds from Wharf's now, within what SigV4 allows. */
  private signing(expiresIn: number) {
    return {
      expiresIn: Math.min(Math.max(1, Math.floor(expiresIn)), MAX_PRESIGNED_SECONDS),
      signingDate: new Date(this.now()),
    }
  }
}
