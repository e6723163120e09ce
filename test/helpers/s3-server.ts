import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import { once } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import { createS3Client, type S3Settings } from '../../src/blobs/s3/s3-client.js'

/** s3rver's fixed key pair: it refuses requests signed with any other. */
export const S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

/**
 * A real S3 protocol server (s3rver, in a child process) on loopback, storing under a temporary
 * folder. Its PUTs are made whole, as S3's are (s3rver-atomic.mjs: s3rver itself writes an object
 * in place, so two PUTs of one key at once could interleave). What it lacks
 * that S3 has: UploadPartCopy and ListMultipartUploads (both answer 501 Not Implemented), and
 * the 5 MiB minimum size of a multipart upload's parts, which it does not enforce. It checks a
 * presigned URL's key and expiry, not its SigV4 signature. ListParts and AbortMultipartUpload,
 * which it lacks too, are added in front of it (s3rver-multipart.mjs).
 */
export interface S3TestServer {
  endpoint: string
  /** A new empty bucket on the server. */
  bucket(): Promise<string>
  /** Settings for a store in `bucket`, under `prefix`. */
  settings(bucket: string, prefix?: string): S3Settings
  client: S3Client
  /** Every key in a bucket under a prefix, the prefix cut off, sorted. */
  keys(bucket: string, prefix?: string): Promise<string[]>
  close(): Promise<void>
}

export async function startS3Server(opts: { stock?: boolean } = {}): Promise<S3TestServer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-s3-'))
  const main = fileURLToPath(new URL('./s3rver-main.mjs', import.meta.url))
  // Stock: s3rver as released, without ListParts and AbortMultipartUpload.
  const child = spawn(process.execPath, [main, dir, ...(opts.stock ? ['--stock'] : [])], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const exited = once(child, 'exit')
  const [line] = (await Promise.race([
    once(readline.createInterface({ input: child.stdout }), 'line'),
    exited.then(() => {
      throw new Error('s3rver exited before it listened')
    }),
  ])) as [string]
  const { port } = JSON.parse(line) as { port: number }
  const endpoint = `http://127.0.0.1:${port}`
  const settings = (bucket: string, prefix = ''): S3Settings => ({
    endpoint,
    region: 'us-east-1',
    bucket,
    prefix,
    forcePathStyle: true,
  })
  const client = createS3Client(settings('any'), S3_CREDENTIALS)
  return {
    endpoint,
    client,
    settings,
    async bucket() {
      const name = `b-${crypto.randomBytes(6).toString('hex')}`
      await client.send(new CreateBucketCommand({ Bucket: name }))
      return name
    },
    async keys(bucket, prefix = '') {
      const keys: string[] = []
      let token: string | undefined
      do {
        const page = await client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        )
        for (const o of page.Contents ?? []) keys.push(o.Key!.slice(prefix.length))
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
      return keys.sort()
    },
    async close() {
      client.destroy()
      child.stdin.end()
      await exited
      await fs.rm(dir, { recursive: true, force: true })
    },
  }
}
