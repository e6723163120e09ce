import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { createS3Client, type S3Settings } from './s3-client.js'
import { newKey } from './s3-objects.js'

/** The object store lacks what the S3 store needs: said in one line, before anything starts. */
export class S3StoreCheckError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'S3StoreCheckError'
  }
}

/** The bytes of the check's one part. */
const PART = Buffer.from('Wharf start-up check\n')
/** One request of the check that gets no answer stops the start rather than hanging it. */
const STEP_TIMEOUT_MS = 30_000

/**
 * Tries, once at start-up, the requests the S3 store cannot do without and some S3-compatible
 * servers lack: a listing of the bucket, then one multipart upload of one small part under
 * `<prefix>start-up-check/`, listed with ListParts (ending an upload lists the parts clients
 * sent) and aborted (how an upload is given up), then a multi-object delete (how blobs go). About
 * six small requests; nothing stays in the bucket. UploadPartCopy and ListMultipartUploads are
 * not tried: the store does without them (it copies bytes itself, and aborts what it opened).
 */
export async function checkS3Store(settings: S3Settings, client?: S3Client): Promise<void> {
  const s3 = client ?? createS3Client(settings)
  const Bucket = settings.bucket
  const Key = `${settings.prefix}start-up-check/${newKey()}`
  const where = `bucket "${Bucket}" at ${settings.endpoint ?? 'AWS'} (region ${settings.region})`
  const step = async <T>(request: string, why: string, run: (signal: AbortSignal) => Promise<T>) => {
    try {
      return await run(AbortSignal.timeout(STEP_TIMEOUT_MS))
    } catch (err) {
      throw new S3StoreCheckError(
        `BLOB_STORE=s3: ${request} failed in ${where} (${describe(err)}); Wharf needs it ${why}`,
      )
    }
  }
  let uploadId: string | undefined
  try {
    await step('ListObjectsV2', 'to find staged parts and uploads', (abortSignal) =>
      s3.send(new ListObjectsV2Command({ Bucket, Prefix: settings.prefix, MaxKeys: 1 }), { abortSignal }),
    )
    const created = await step('CreateMultipartUpload', 'to store files', (abortSignal) =>
      s3.send(new CreateMultipartUploadCommand({ Bucket, Key }), { abortSignal }),
    )
    uploadId = created.UploadId
    if (!uploadId)
      throw new S3StoreCheckError(`BLOB_STORE=s3: ${where} started a multipart upload without an id`)
    const part = { Bucket, Key, UploadId: uploadId }
    await step('UploadPart', 'to store files', (abortSignal) =>
      s3.send(new UploadPartCommand({ ...part, PartNumber: 1, Body: PART, ContentLength: PART.length }), {
        abortSignal,
      }),
    )
    const listed = await step('ListParts', 'to finish an upload', (abortSignal) =>
      s3.send(new ListPartsCommand(part), { abortSignal }),
    )
    const first = listed.Parts?.find((p) => p.PartNumber === 1)
    if (!first?.ETag || first.Size !== PART.length)
      throw new S3StoreCheckError(
        `BLOB_STORE=s3: ListParts in ${where} did not list the part just sent (with its ETag and size); Wharf needs it to finish an upload`,
      )
    await step('AbortMultipartUpload', 'to give up an upload', (abortSignal) =>
      s3.send(new AbortMultipartUploadCommand(part), { abortSignal }),
    )
    uploadId = undefined
    await step('DeleteObjects', 'to delete files', (abortSignal) =>
      s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: [{ Key }], Quiet: true } }), {
        abortSignal,
      }),
    )
  } finally {
    // A check that failed half-way leaves nothing open that it can still close.
    if (uploadId)
      await s3
        .send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId }))
        .catch(() => undefined)
    if (!client) s3.destroy()
  }
}

function describe(err: unknown): string {
  const e = (err ?? {}) as {
    name?: string
    code?: string
    message?: string
    $metadata?: { httpStatusCode?: number }
  }
  const status = e.$metadata?.httpStatusCode
  if (status) return `${status} ${e.name ?? ''}`.trim()
  return [e.code ?? e.name, e.message].filter(Boolean).join(': ') || String(err)
}
