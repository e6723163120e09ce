import crypto from 'node:crypto'
import { afterAll, beforeAll, vi } from 'vitest'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './s3-server.js'
import { dialects } from './server.js'

/** The S3 test server of one test file, and a bucket on it. */
export interface FileS3 {
  readonly server: S3TestServer
  readonly bucket: string
}

/**
 * Starts an S3 test server before the file's tests and stops it after them; meanwhile its
 * credentials are in the environment, where the SDK's default chain finds them (as an operator's
 * would be).
 */
export function s3ForTests(): FileS3 {
  const s3 = {} as { server: S3TestServer; bucket: string }
  beforeAll(async () => {
    s3.server = await startS3Server()
    s3.bucket = await s3.server.bucket()
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3_CREDENTIALS.secretAccessKey)
  })
  afterAll(async () => {
    vi.unstubAllEnvs()
    await s3.server?.close()
  })
  return s3
}

/**
 * The settings that choose each blob store: the local disk, and S3 (proxy mode unless asked)
 * under a prefix of its own for every server started, since the bucket is shared.
 */
export function storeSettings(s3: FileS3, name: string, mode: 'proxy' | 'direct' = 'proxy') {
  return [
    { store: 'disk', env: (): Record<string, string> => ({}) },
    {
      store: 's3',
      env: (): Record<string, string> => ({
        BLOB_STORE: 's3',
        S3_ENDPOINT: s3.server.endpoint,
        S3_BUCKET: s3.bucket,
        S3_PREFIX: `${name}-${crypto.randomBytes(6).toString('hex')}`,
        S3_FORCE_PATH_STYLE: 'true',
        S3_TRANSFER_MODE: mode,
      }),
    },
  ]
}

/** Each database with each blob store. */
export function storeCases(s3: FileS3, name: string, mode: 'proxy' | 'direct' = 'proxy') {
  return dialects.flatMap((dialect) => storeSettings(s3, name, mode).map((c) => ({ dialect, ...c })))
}
