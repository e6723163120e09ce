import { Readable } from 'node:stream'
import type { S3Client } from '@aws-sdk/client-s3'
import { describe, expect, it } from 'vitest'
import { ApiError } from '../src/api/errors.js'
import { S3BlobStore } from '../src/blobs/s3/s3-blob-store.js'
import { guardStorageFull } from '../src/blobs/storage-full-guard.js'

/** An S3 client whose server knows every object's size but answers every other request with an error. */
function answering(code: string, status: number): S3Client {
  const fake = {
    send: async (command: object) => {
      if (command.constructor.name === 'HeadObjectCommand') return { ContentLength: 5 }
      throw Object.assign(new Error(`${code} from the object store`), {
        name: code,
        $metadata: { httpStatusCode: status },
      })
    },
  }
  return fake as unknown as S3Client
}

const storeAnswering = (code: string, status: number) =>
  guardStorageFull(
    new S3BlobStore({ client: answering(code, status), bucket: 'files', prefix: '', tmpDir: '/nonexistent' }),
  )

describe('S3 blob store behind the storage-full guard', () => {
  it('answers a full object store (MinIO, a bucket quota) as a full disk: 507 storage-full', async () => {
    for (const code of ['XMinioStorageFull', 'QuotaExceeded']) {
      const store = storeAnswering(code, 507)
      for (const attempt of [
        () => store.put(Readable.from([Buffer.from('bytes')])),
        () => store.putPart('up1', 1, Readable.from([Buffer.from('bytes')])),
        () => store.copy('a'.repeat(32)),
      ]) {
        const err = await attempt().catch((e: unknown) => e)
        expect(err, code).toBeInstanceOf(ApiError)
        expect((err as ApiError).type).toBe('service-unavailable/storage-full')
        expect((err as ApiError).extras.cause).toMatchObject({ name: code })
      }
    }
  })

  it('passes other object-store errors on unchanged', async () => {
    const err = await storeAnswering('AccessDenied', 403)
      .put(Readable.from([Buffer.from('bytes')]))
      .catch((e: unknown) => e)
    expect(err).not.toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ name: 'AccessDenied' })
  })
})
