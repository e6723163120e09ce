import fs from 'node:fs/promises'
import http from 'node:http'
import path from 'node:path'
import type { Kysely } from 'kysely'
import { expect, vi } from 'vitest'
import type { BlobStore } from '../../src/blobs/blob-store.js'
import type { Config } from '../../src/config.js'
import type { Database } from '../../src/db/schema.js'

/** What a test can see of DATA_DIR/storage, and part uploads cut off on purpose. */

/**
 * Every published blob key: the entries of DATA_DIR/storage/blobs/ab/cd/ (a blob is a file, or a
 * folder of linked parts).
 */
export async function blobsOnDisk(storage: string): Promise<string[]> {
  const keys: string[] = []
  const ls = (dir: string) => fs.readdir(dir).catch(() => [] as string[])
  const root = path.join(storage, 'blobs')
  for (const a of await ls(root)) {
    for (const b of await ls(path.join(root, a))) keys.push(...(await ls(path.join(root, a, b))))
  }
  return keys
}

/** Staged-part folders (one per upload ref) under DATA_DIR/storage/parts. */
export async function stagedRefs(storage: string): Promise<string[]> {
  return fs.readdir(path.join(storage, 'parts')).catch(() => [])
}

/** A blob on disk must belong to a file or wait in the deletion queue; every file's blob must exist. */
export async function expectNoLeakedBlobs(db: Kysely<Database>, storage: string): Promise<void> {
  const files = await db.selectFrom('files').select('blob_key').where('blob_key', 'is not', null).execute()
  const queued = await db.selectFrom('blob_garbage').select('blob_key').execute()
  const known = new Set([...files.map((r) => r.blob_key!), ...queued.map((r) => r.blob_key)])
  const onDisk = await blobsOnDisk(storage)
  expect(onDisk.filter((k) => !known.has(k))).toEqual([])
  const present = new Set(onDisk)
  expect(files.map((r) => r.blob_key!).filter((k) => !present.has(k))).toEqual([])
}

/**
 * Starts a part PUT that sends `sent` of its `declared` bytes and then stalls; resolves once the
 * server is writing it to storage (a file in storage/tmp), or after a short grace if it never
 * shows. `abort()` cuts the connection.
 */
export async function stalledPut(uri: string, declared: number, sent: Buffer, storage: string) {
  const u = new URL(uri)
  const request = http.request({
    host: u.hostname,
    port: u.port,
    method: 'PUT',
    path: `${u.pathname}${u.search}`,
    headers: { 'Content-Length': String(declared), 'Content-Type': 'application/octet-stream' },
  })
  const answered = new Promise<number | 'aborted'>((resolve) => {
    request.on('response', (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    request.on('error', () => resolve('aborted'))
  })
  request.write(sent)
  // A part that never reaches storage is not an error here: the caller's assertions tell.
  await vi
    .waitFor(async () => expect(await fs.readdir(path.join(storage, 'tmp'))).not.toHaveLength(0), {
      timeout: 10_000,
      interval: 50,
    })
    .catch(() => undefined)
  return {
    answered,
    abort: () => request.destroy(),
  }
}

/**
 * Every published blob key of a server's store, on disk (DATA_DIR/storage/blobs) or in its S3
 * bucket (`blobs/<key>` under its prefix), for tests that run on both.
 */
export async function storedBlobKeys(
  config: Config,
  keysInBucket: (bucket: string, prefix: string) => Promise<string[]>,
): Promise<string[]> {
  const s3 = config.blobs.store === 's3' ? config.blobs.s3 : undefined
  if (!s3) return (await blobsOnDisk(path.join(config.dataDir, 'storage'))).sort()
  const keys = await keysInBucket(s3.bucket, s3.prefix)
  return keys
    .filter((k) => k.startsWith('blobs/'))
    .map((k) => k.slice('blobs/'.length))
    .sort()
}

/** The keys waiting in the blob deletion queue, sorted. */
export async function queuedBlobKeys(db: Kysely<Database>): Promise<string[]> {
  return (await db.selectFrom('blob_garbage').select('blob_key').execute()).map((r) => r.blob_key).sort()
}

/** What a watched store call does besides its own work (watchStore). */
export interface StoreHooks<M extends keyof BlobStore> {
  /** Run before the store is asked, with the method and its arguments. */
  before?: (method: M, args: unknown[]) => Promise<void>
  /** Run once the store answered, with the method and the key of the blob it made. */
  after: (method: M, key: string) => Promise<void>
}

/**
 * A wrapper for startServer's `wrapBlobStore`: the store, with `hooks` called around every call of
 * `methods` (each makes a blob and answers its key, or an object holding it): how the crash tests
 * stop a process right after the store wrote a blob and before anything recorded it.
 */
export function watchStore<M extends keyof BlobStore>(methods: M[], hooks: StoreHooks<M>) {
  return (store: BlobStore): BlobStore =>
    new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver)
        if (typeof value !== 'function') return value
        if (!methods.includes(prop as M)) return value.bind(target)
        const method = prop as M
        return async (...args: unknown[]) => {
          await hooks.before?.(method, args)
          const made = (await value.apply(target, args)) as string | { key: string }
          await hooks.after(method, typeof made === 'string' ? made : made.key)
          return made
        }
      },
    })
}
