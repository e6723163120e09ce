import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { text } from 'node:stream/consumers'
import zlib from 'node:zlib'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  BlobNotFoundError,
  type BlobStore,
  BlobTooLargeError,
  StagedPartError,
} from '../src/blobs/blob-store.js'
import { LocalBlobStore } from '../src/blobs/disk/local-blob-store.js'
import { useCollector } from '../src/blobs/read-buffers.js'
import { S3BlobStore } from '../src/blobs/s3/s3-blob-store.js'
import { createS3Client } from '../src/blobs/s3/s3-client.js'
import { S3DirectBlobStore } from '../src/blobs/s3/s3-direct-store.js'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './helpers/s3-server.js'

/** One store under test: how to make it, and where its bytes show (files, or objects). */
interface StoreCase {
  name: string
  make(root: string): Promise<BlobStore>
  /** Everything the store holds: files under root, or objects (relative to the prefix) and local files. */
  entries(root: string): Promise<string[]>
  /** What one published blob (`put`) is made of. */
  blobEntries(key: string): string[]
  /** How many entries assembling one part adds. */
  assembledEntries: number
  /** Whether its reads come from a socket, and so are counted to free their buffers. */
  socketReads: boolean
  /** Whether a part sent with its length goes on as it arrives rather than being staged. */
  streamsParts: boolean
}

/** Every file under a folder, relative to it (folders left out). */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await fs.readdir(root, { recursive: true, withFileTypes: true })
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort()
}

let s3: S3TestServer
let bucket: string
let prefix = ''
beforeAll(async () => {
  s3 = await startS3Server()
  bucket = await s3.bucket()
})
afterAll(async () => {
  await s3?.close()
})

const stores: StoreCase[] = [
  {
    name: 'local disk',
    make: async (root) => new LocalBlobStore(root),
    entries: filesUnder,
    blobEntries: (key) => [path.join('blobs', key.slice(0, 2), key.slice(2, 4), key)],
    // The part's link and the sizes file.
    assembledEntries: 2,
    socketReads: false,
    streamsParts: false,
  },
  {
    name: 'S3',
    make: async (root) => {
      // A prefix of its own per test: the bucket is shared, the store sees only its part.
      prefix = `wharf-${crypto.randomBytes(4).toString('hex')}/`
      return new S3BlobStore({
        client: createS3Client(s3.settings(bucket, prefix), S3_CREDENTIALS),
        bucket,
        prefix,
        tmpDir: path.join(root, 'tmp'),
      })
    },
    entries: async (root) => [...(await s3.keys(bucket, prefix)), ...(await filesUnder(root))].sort(),
    blobEntries: (key) => [`blobs/${key}`],
    assembledEntries: 1,
    socketReads: true,
    streamsParts: true,
  },
  {
    // Direct mode's store keeps the whole contract for parts sent through Wharf (the protocol
    // front ends' uploads), beside the presigned URLs it adds.
    name: 'S3 in direct mode',
    make: async (root) => {
      prefix = `wharf-${crypto.randomBytes(4).toString('hex')}/`
      return new S3DirectBlobStore({
        client: createS3Client(s3.settings(bucket, prefix), S3_CREDENTIALS),
        bucket,
        prefix,
        tmpDir: path.join(root, 'tmp'),
      })
    },
    entries: async (root) => [...(await s3.keys(bucket, prefix)), ...(await filesUnder(root))].sort(),
    blobEntries: (key) => [`blobs/${key}`],
    assembledEntries: 1,
    socketReads: true,
    streamsParts: true,
  },
]

describe.each(stores)('blob store on $name', (storeCase) => {
  let root: string
  let store: BlobStore

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-blobs-'))
    store = await storeCase.make(root)
  })
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true })
  })

  const md5 = (b: Buffer | string) => crypto.createHash('md5').update(b).digest('hex')
  const sha256 = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')
  const crc = (b: Buffer | string) => zlib.crc32(b).toString(16).padStart(8, '0')
  const from = (...chunks: (string | Buffer)[]) => Readable.from(chunks.map((c) => Buffer.from(c)))
  const read = async (key: string, range?: { start: number; end: number }) =>
    text(await store.open(key, range))
  /** An assembled blob with the checksums the store computes by reading it. */
  const summed = async (info: { key: string; size: number }) => ({
    ...info,
    ...(await store.checksums(info.key)),
  })

  /** A stream that yields some bytes, then fails as an aborted request body would. */
  function failing(after: string): Readable {
    let sent = false
    return new Readable({
      read() {
        if (sent) {
          this.destroy(new Error('connection reset'))
          return
        }
        sent = true
        this.push(Buffer.from(after))
      },
    })
  }

  const files = () => storeCase.entries(root)

  it('stores a stream and reports its size and checksums', async () => {
    const info = await store.put(from('hello ', 'world'))
    expect(info).toEqual({
      key: info.key,
      size: 11,
      md5: md5('hello world'),
      crc32: crc('hello world'),
      sha256: sha256('hello world'),
    })
    expect(info.key).toMatch(/^[0-9a-f]{32}$/)
    expect(await read(info.key)).toBe('hello world')
    expect(await store.size(info.key)).toBe(11)
    expect(await files()).toEqual(storeCase.blobEntries(info.key))
  })

  it("computes a blob's checksums by reading it, whether put or assembled", async () => {
    const put = await store.put(from('hello ', 'world'))
    expect(await store.checksums(put.key)).toEqual({
      size: 11,
      md5: md5('hello world'),
      crc32: crc('hello world'),
      sha256: sha256('hello world'),
    })
    await store.putPart('sum', 1, from('hello '))
    await store.putPart('sum', 2, from(''))
    await store.putPart('sum', 3, from('world'))
    const assembled = await store.assemble('sum', [1, 2, 3])
    expect(assembled).toEqual({ key: assembled.key, size: 11 })
    expect(await store.checksums(assembled.key)).toEqual({
      size: 11,
      md5: md5('hello world'),
      crc32: crc('hello world'),
      sha256: sha256('hello world'),
    })
    const empty = await store.put(Readable.from([]))
    expect(await store.checksums(empty.key)).toEqual({
      size: 0,
      md5: 'd41d8cd98f00b204e9800998ecf8427e',
      crc32: '00000000',
      sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    })
  })

  it('refuses the checksums of a blob that does not exist, and stops when aborted', async () => {
    for (const key of ['f'.repeat(32), '../../etc/passwd']) {
      await expect(store.checksums(key)).rejects.toBeInstanceOf(BlobNotFoundError)
    }
    const { key } = await store.put(from('abc'))
    await store.delete(key)
    await expect(store.checksums(key)).rejects.toBeInstanceOf(BlobNotFoundError)
    const big = await store.put(Readable.from([crypto.randomBytes(3 * 1024 * 1024)]))
    const abort = new AbortController()
    abort.abort(new Error('stopping'))
    await expect(store.checksums(big.key, { signal: abort.signal })).rejects.toThrow()
  })

  it('gives the empty blob the well-known empty checksums', async () => {
    const info = await store.put(Readable.from([]))
    expect(info).toMatchObject({ size: 0, md5: 'd41d8cd98f00b204e9800998ecf8427e', crc32: '00000000' })
    expect(await read(info.key)).toBe('')
  })

  it('pads a small CRC-32 to eight hex characters', async () => {
    // Found by search: a short input whose CRC-32 is below 0x10000000.
    let s = 0
    while (zlib.crc32(String(s)) >= 0x10000000) s++
    const info = await store.put(from(String(s)))
    expect(info.crc32).toHaveLength(8)
    expect(info.crc32).toBe(crc(String(s)))
  })

  it('leaves nothing behind when the input stream fails midway', async () => {
    await expect(store.put(failing('partial'))).rejects.toThrow('connection reset')
    await expect(store.putPart('up1', 1, failing('partial'))).rejects.toThrow('connection reset')
    expect(await files()).toEqual([])
  })

  it('refuses more than maxBytes with BlobTooLargeError and keeps nothing', async () => {
    const source = from('12345', '67890')
    const err = await store.put(source, { maxBytes: 7 }).catch((e) => e)
    expect(err).toBeInstanceOf(BlobTooLargeError)
    expect(err.limit).toBe(7)
    expect(source.destroyed).toBe(true) // as the interface documents
    await expect(store.putPart('up1', 1, from('12345678'), { maxBytes: 7 })).rejects.toBeInstanceOf(
      BlobTooLargeError,
    )
    expect(await files()).toEqual([])
    // Exactly the limit is fine.
    expect((await store.put(from('1234567'), { maxBytes: 7 })).size).toBe(7)
  })

  it('reads an inclusive byte range', async () => {
    const { key } = await store.put(from('0123456789'))
    expect(await read(key, { start: 0, end: 0 })).toBe('0')
    expect(await read(key, { start: 2, end: 5 })).toBe('2345')
    expect(await read(key, { start: 7, end: 9 })).toBe('789')
    expect(await read(key, { start: 7, end: 100 })).toBe('789')
  })

  it('refuses a backwards or negative range before opening anything', async () => {
    const { key } = await store.put(from('0123456789'))
    await expect(store.open(key, { start: 5, end: 4 })).rejects.toBeInstanceOf(RangeError)
    await expect(store.open(key, { start: -1, end: 4 })).rejects.toBeInstanceOf(RangeError)
    await expect(store.open(key, { start: 1.5, end: 4 })).rejects.toBeInstanceOf(RangeError)
  })

  it('treats a missing or malformed key as a blob that does not exist', async () => {
    const missing = 'f'.repeat(32)
    for (const key of [missing, '../../etc/passwd', 'ab/cd', 'F'.repeat(32), '']) {
      await expect(store.open(key)).rejects.toBeInstanceOf(BlobNotFoundError)
      await expect(store.copy(key)).rejects.toBeInstanceOf(BlobNotFoundError)
      expect(await store.size(key)).toBeNull()
      await store.delete(key)
    }
    expect(await files()).toEqual([])
  })

  it('copies into an independent blob', async () => {
    const a = await store.put(from('shared bytes'))
    const b = await store.copy(a.key)
    expect(b).not.toBe(a.key)
    expect(await read(b)).toBe('shared bytes')
    await store.delete(a.key)
    expect(await store.size(a.key)).toBeNull()
    expect(await read(b)).toBe('shared bytes')
  })

  it('lists the key of every blob, put, copied or assembled, and not staged parts', async () => {
    const allKeys = async () => {
      const keys: string[] = []
      for await (const key of store.keys()) keys.push(key)
      return keys
    }
    expect(await allKeys()).toEqual([])
    const a = await store.put(from('one'))
    const b = await store.copy(a.key)
    await store.putPart('ref-keys', 1, from('part'))
    const c = await store.assemble('ref-keys', [1])
    await store.putPart('ref-staged', 1, from('staged only'))
    expect((await allKeys()).sort()).toEqual([a.key, b, c.key].sort())
    await store.delete(b)
    expect((await allKeys()).sort()).toEqual([a.key, c.key].sort())
  })

  it('deletes idempotently', async () => {
    const { key } = await store.put(from('x'))
    await store.delete(key)
    await store.delete(key)
    await expect(store.open(key)).rejects.toBeInstanceOf(BlobNotFoundError)
  })

  it('assembles many parts, in the order given, into their concatenation', async () => {
    const parts: Buffer[] = []
    for (let n = 1; n <= 40; n++) {
      const bytes = crypto.randomBytes(1000 + n * 37)
      parts.push(bytes)
      expect(await store.putPart('upload_A-1', n, Readable.from([bytes]))).toEqual({ size: bytes.length })
    }
    const all = Buffer.concat(parts)
    const info = await summed(
      await store.assemble(
        'upload_A-1',
        parts.map((_, i) => i + 1),
      ),
    )
    expect(info).toMatchObject({ size: all.length, md5: md5(all), crc32: crc(all) })
    const back = Buffer.concat(await (await store.open(info.key)).toArray())
    expect(back.equals(all)).toBe(true)
    // Order is the caller's, and the parts stay staged until discarded.
    const reversed = await summed(await store.assemble('upload_A-1', [2, 1]))
    expect(reversed.md5).toBe(md5(Buffer.concat([parts[1]!, parts[0]!])))
  })

  it('assembles parts of 5 MiB and more, with a small last one, into their concatenation', async () => {
    // Large enough for S3 to build the object from the staged parts server-side (s3rver has no
    // UploadPartCopy, so there the store falls back to streaming them through).
    const parts = [
      crypto.randomBytes(5 * 1024 * 1024 + 1),
      crypto.randomBytes(5 * 1024 * 1024),
      crypto.randomBytes(999),
    ]
    for (const [i, p] of parts.entries()) await store.putPart('big', i + 1, Readable.from([p]))
    const all = Buffer.concat(parts)
    const info = await summed(
      await store.assemble(
        'big',
        [1, 2, 3],
        parts.map((p) => p.length),
      ),
    )
    expect(info).toMatchObject({ size: all.length, md5: md5(all), crc32: crc(all) })
    const back = Buffer.concat(await (await store.open(info.key)).toArray())
    expect(md5(back)).toBe(md5(all))
    const start = 5 * 1024 * 1024 - 10
    const slice = Buffer.concat(await (await store.open(info.key, { start, end: start + 20 })).toArray())
    expect(slice.equals(all.subarray(start, start + 21))).toBe(true)
  })

  it('reads any byte range of an assembled blob across its parts', async () => {
    const parts = ['abc', '', 'defgh', 'ij']
    for (const [i, p] of parts.entries()) await store.putPart('seg', i + 1, from(p))
    const info = await store.assemble('seg', [1, 2, 3, 4])
    expect(await store.size(info.key)).toBe(10)
    expect(await read(info.key)).toBe('abcdefghij')
    for (let start = 0; start < 10; start++) {
      for (let end = start; end < 10; end++) {
        expect(await read(info.key, { start, end })).toBe('abcdefghij'.slice(start, end + 1))
      }
    }
    expect(await read(info.key, { start: 8, end: 50 })).toBe('ij')
  })

  it('refuses to assemble a part whose size is not what was stored (lost in a crash)', async () => {
    await store.putPart('short', 1, from('abcdef'))
    await store.putPart('short', 2, from('gh'))
    const err = await store.assemble('short', [1, 2], [6, 3]).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StagedPartError)
    expect((err as StagedPartError).partNumber).toBe(2)
    const info = await store.assemble('short', [1, 2], [6, 2])
    expect(await read(info.key)).toBe('abcdefgh')
  })

  it('checksums a part restaged after it was hashed ahead by its new bytes', async () => {
    await store.putPart('again', 1, from('aaaa'))
    await store.putPart('again', 2, from('bbbb'))
    await new Promise((r) => setTimeout(r, 50))
    await store.putPart('again', 1, from('xxxxxx'))
    const info = await summed(await store.assemble('again', [1, 2]))
    expect(info.md5).toBe(md5('xxxxxxbbbb'))
    expect(info.crc32).toBe(crc('xxxxxxbbbb'))
    expect(info.size).toBe(10)
    expect(await read(info.key)).toBe('xxxxxxbbbb')
  })

  it('checksums parts staged out of order and in parallel', async () => {
    const parts = Array.from({ length: 12 }, (_, i) => crypto.randomBytes(1000 + i * 37))
    await Promise.all(
      [...parts.keys()].reverse().map((i) => store.putPart('shuffled', i + 1, from(parts[i]!))),
    )
    const whole = Buffer.concat(parts)
    const info = await summed(
      await store.assemble(
        'shuffled',
        parts.map((_, i) => i + 1),
      ),
    )
    expect([info.md5, info.crc32, info.size]).toEqual([md5(whole), crc(whole), whole.length])
  })

  it('keeps an assembled blob unchanged when its upload restages or discards a part', async () => {
    await store.putPart('own', 1, from('first'))
    const info = await store.assemble('own', [1])
    await store.putPart('own', 1, from('second'))
    expect(await read(info.key)).toBe('first')
    await store.discardUpload('own')
    expect(await read(info.key)).toBe('first')
  })

  it('writes a blob under a key from newKey, which the caller can record before it exists', async () => {
    await store.putPart('keyed', 1, from('one'))
    await store.putPart('keyed', 2, from('two'))
    const key = store.newKey()
    expect(key).not.toBe(store.newKey())
    expect(await store.size(key)).toBeNull()
    const info = await store.assemble('keyed', [1, 2], [3, 3], key)
    expect(info).toEqual({ key, size: 6 })
    expect(await read(key)).toBe('onetwo')
    const empty = store.newKey()
    expect((await store.put(from(''), { key: empty })).key).toBe(empty)
    expect(await store.size(empty)).toBe(0)
  })

  it('writes, copies and publishes segments under keys chosen beforehand', async () => {
    const unhashed = store.newKey()
    expect(await store.putUnhashed(from('plain ', 'bytes'), { key: unhashed })).toEqual({
      key: unhashed,
      size: 11,
    })
    expect(await read(unhashed)).toBe('plain bytes')

    const segments = store.newKey()
    const info = await store.putSegments(
      2,
      async (files) => {
        await fs.writeFile(files[1]!, 'two')
        await fs.writeFile(files[0]!, 'one,')
      },
      { key: segments },
    )
    expect(info).toEqual({ key: segments, size: 7 })
    expect(await read(segments)).toBe('one,two')

    // A copy of a one-piece blob and of a blob in segments, each independent of its source.
    const copies = [store.newKey(), store.newKey()]
    expect(await store.copy(unhashed, copies[0])).toBe(copies[0])
    expect(await store.copy(segments, copies[1])).toBe(copies[1])
    await store.delete(unhashed)
    await store.delete(segments)
    expect(await read(copies[0]!)).toBe('plain bytes')
    expect(await read(copies[1]!)).toBe('one,two')
    expect(await store.size(copies[1]!)).toBe(7)

    await store.delete(copies[0]!)
    await store.delete(copies[1]!)
    expect(await files()).toEqual([])
  })

  it('shows nothing under a chosen key until its blob is complete, and nothing after a failure', async () => {
    const key = store.newKey()
    await expect(store.putUnhashed(failing('half a blob'), { key })).rejects.toThrow('connection reset')
    expect(await store.size(key)).toBeNull()

    let seen: number | null | undefined
    await expect(
      store.putSegments(
        2,
        async (files) => {
          await fs.writeFile(files[0]!, 'half')
          // Written but not published: nothing under the key yet.
          seen = await store.size(key)
          throw new Error('the other half failed')
        },
        { key },
      ),
    ).rejects.toThrow('the other half failed')
    expect(seen).toBeNull()
    expect(await store.size(key)).toBeNull()

    await expect(store.copy('f'.repeat(32), key)).rejects.toBeInstanceOf(BlobNotFoundError)
    expect(await store.size(key)).toBeNull()
    expect(await files()).toEqual([])
  })

  it('refuses a chosen key that is not one of its keys before writing anything', async () => {
    const source = await store.put(from('source'))
    const before = await files()
    for (const bad of ['../../etc/passwd', 'ab/cd', 'F'.repeat(32), '']) {
      const refused = (p: Promise<unknown>) =>
        expect(p).rejects.toThrow(`Invalid blob key ${JSON.stringify(bad)}`)
      await refused(store.copy(source.key, bad))
      await refused(store.putUnhashed(from('x'), { key: bad }))
      await refused(store.putSegments(1, async (f) => fs.writeFile(f[0]!, 'x'), { key: bad }))
      await refused(store.put(from('x'), { key: bad }))
    }
    expect(await files()).toEqual(before)
  })

  it('copies and deletes an assembled blob independently', async () => {
    await store.putPart('cp', 1, from('one'))
    await store.putPart('cp', 2, from('two'))
    const info = await store.assemble('cp', [1, 2])
    const copy = await store.copy(info.key)
    await store.delete(info.key)
    expect(await store.size(info.key)).toBeNull()
    await expect(store.open(info.key)).rejects.toBeInstanceOf(BlobNotFoundError)
    expect(await read(copy)).toBe('onetwo')
    expect(await store.size(copy)).toBe(6)
  })

  it('fails to assemble a part that was never staged and leaves no blob', async () => {
    await store.putPart('up1', 1, from('a'))
    await expect(store.assemble('up1', [1, 2])).rejects.toBeInstanceOf(StagedPartError)
    expect(await files()).toEqual([path.join('parts', 'up1', '1')])
  })

  it('replaces a staged part only with a complete one', async () => {
    await store.putPart('up1', 1, from('first'))
    await expect(store.putPart('up1', 1, failing('second, cut short'))).rejects.toThrow()
    expect(await text(await store.open((await store.assemble('up1', [1])).key))).toBe('first')
    await store.putPart('up1', 1, from('second'))
    expect((await summed(await store.assemble('up1', [1]))).md5).toBe(md5('second'))
  })

  it('keeps one whole copy when the same part arrives twice at once', async () => {
    const a = crypto.randomBytes(300_000)
    const b = crypto.randomBytes(300_000)
    await Promise.all([
      store.putPart('up1', 3, Readable.from([a.subarray(0, 100_000), a.subarray(100_000)])),
      store.putPart('up1', 3, Readable.from([b.subarray(0, 150_000), b.subarray(150_000)])),
    ])
    const info = await summed(await store.assemble('up1', [3]))
    expect([md5(a), md5(b)]).toContain(info.md5)
    // The part and the assembled blob; no temporary file.
    expect(await files()).toHaveLength(1 + storeCase.assembledEntries)
  })

  it('lists staged uploads and discards them idempotently', async () => {
    await store.putPart('up1', 1, from('a'))
    await store.putPart('up2', 2, from('b'))
    const staged = []
    for await (const s of store.stagedUploads()) staged.push(s)
    expect(staged.map((s) => s.ref).sort()).toEqual(['up1', 'up2'])
    for (const s of staged) expect(Math.abs(s.modifiedAt - Date.now())).toBeLessThan(60_000)
    await store.discardUpload('up1')
    await store.discardUpload('up1')
    await store.discardUpload('never-there')
    const left = []
    for await (const s of store.stagedUploads()) left.push(s.ref)
    expect(left).toEqual(['up2'])
  })

  it('refuses refs and part numbers that could leave the staging folder', async () => {
    for (const ref of ['..', '../x', 'a/b', 'a.b', '', 'x'.repeat(65)]) {
      await expect(store.putPart(ref, 1, from('a'))).rejects.toThrow(/ref/)
      await expect(store.assemble(ref, [1])).rejects.toThrow(/ref/)
      await expect(store.discardUpload(ref)).rejects.toThrow(/ref/)
    }
    for (const n of [0, -1, 1.5, 10001, Number.NaN]) {
      await expect(store.putPart('up1', n, from('a'))).rejects.toThrow(/part number/)
      await expect(store.assemble('up1', [n])).rejects.toThrow(/part number/)
    }
    expect(await files()).toEqual([])
  })

  it('sweeps only temporary files older than the age given', async () => {
    await store.put(from('x')) // creates the folders
    await fs.mkdir(path.join(root, 'tmp'), { recursive: true })
    const old = path.join(root, 'tmp', 'old')
    const fresh = path.join(root, 'tmp', 'fresh')
    await fs.writeFile(old, 'crashed mid-write')
    await fs.writeFile(fresh, 'being written')
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000)
    await fs.utimes(old, twoHoursAgo, twoHoursAgo)
    expect(await store.sweepTemporary(3600_000)).toBe(1)
    expect((await fs.readdir(path.join(root, 'tmp'))).sort()).toEqual(['fresh'])
  })

  it('keeps a temporary folder while any file in it is fresh', async () => {
    await store.put(from('x'))
    await fs.mkdir(path.join(root, 'tmp'), { recursive: true })
    const busy = path.join(root, 'tmp', 'busy')
    const idle = path.join(root, 'tmp', 'idle')
    for (const dir of [busy, idle]) {
      await fs.mkdir(dir)
      await fs.writeFile(path.join(dir, '1'), 'first segment')
      await fs.writeFile(path.join(dir, '2'), 'second segment')
    }
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000)
    // A long build: the folder and its first file are old, the file still being written is not.
    await fs.utimes(path.join(busy, '1'), twoHoursAgo, twoHoursAgo)
    await fs.utimes(busy, twoHoursAgo, twoHoursAgo)
    for (const f of [path.join(idle, '1'), path.join(idle, '2'), idle])
      await fs.utimes(f, twoHoursAgo, twoHoursAgo)
    expect(await store.sweepTemporary(3600_000)).toBe(1)
    expect((await fs.readdir(path.join(root, 'tmp'))).sort()).toEqual(['busy'])
  })

  it('publishes files written side by side as one blob, in order, or nothing when a writer fails', async () => {
    const info = await store.putSegments(3, async (files) => {
      // Written in any order, as two threads would.
      await fs.writeFile(files[2]!, 'third')
      await fs.writeFile(files[0]!, 'first,')
      await fs.writeFile(files[1]!, '')
    })
    expect(info.size).toBe('first,third'.length)
    expect(await read(info.key)).toBe('first,third')
    expect(await read(info.key, { start: 4, end: 7 })).toBe('t,th')
    expect(await store.size(info.key)).toBe(11)

    await expect(
      store.putSegments(2, async (files) => {
        await fs.writeFile(files[0]!, 'half')
        throw new Error('the other half failed')
      }),
    ).rejects.toThrow('the other half failed')
    expect(await fs.readdir(path.join(root, 'tmp'))).toEqual([])
  })

  it('counts the bytes it takes in, and those it reads from a socket, to free their buffers', async () => {
    let calls = 0
    useCollector(() => calls++)
    try {
      const info = await store.put(
        Readable.from(Array.from({ length: 128 }, () => Buffer.alloc(64 * 1024, 7))),
      )
      expect(calls, 'put').toBe(2)
      calls = 0
      let read = 0
      for await (const c of await store.open(info.key)) read += (c as Buffer).length
      expect(read).toBe(8 << 20)
      expect(calls, 'read').toBe(storeCase.socketReads ? 2 : 0)
      // The checksums count what they hash, once, whichever store read it.
      calls = 0
      await store.checksums(info.key)
      expect(calls, 'checksums').toBe(2)
    } finally {
      useCollector(undefined)
    }
  })

  describe('parts sent with their length', () => {
    const MiB = 1024 * 1024
    const big = () => crypto.randomBytes(5 * MiB + 3)
    const sized = (b: Buffer) => ({ length: b.length })

    it('assembles them with staged ones, whichever copy of a part came last', async () => {
      const [a, b, c, d] = [big(), big(), big(), big()]
      const last = crypto.randomBytes(999)
      // Part 1 staged, then sent again with its length; part 2 the other way round.
      await store.putPart('sized', 1, Readable.from([a]))
      expect(await store.putPart('sized', 1, Readable.from([b]), sized(b))).toEqual({ size: b.length })
      await store.putPart('sized', 2, Readable.from([c]), sized(c))
      await store.putPart('sized', 2, Readable.from([d]))
      // A small last part with its length is staged as any small part.
      await store.putPart('sized', 3, Readable.from([last]), sized(last))
      const all = Buffer.concat([b, d, last])
      const plan = await store.planAssembly?.('sized')
      const info = await summed(
        await store.assemble(
          'sized',
          [1, 2, 3],
          [b.length, d.length, last.length],
          plan?.key ?? undefined,
          plan,
        ),
      )
      expect(info).toMatchObject({ size: all.length, md5: md5(all), crc32: crc(all) })
      const start = 5 * MiB - 10
      const slice = Buffer.concat(await (await store.open(info.key, { start, end: start + 20 })).toArray())
      expect(slice.equals(all.subarray(start, start + 21))).toBe(true)
    })

    it('keeps the earlier copy when the new one fails midway, without waiting for the rest', async () => {
      const first = big()
      await store.putPart('cut', 1, Readable.from([first]), sized(first))
      // Says 6 MiB, sends 1 MiB, then fails as a dropped connection does.
      await expect(store.putPart('cut', 1, failing('x'.repeat(MiB)), { length: 6 * MiB })).rejects.toThrow(
        'connection reset',
      )
      expect((await summed(await store.assemble('cut', [1], [first.length]))).md5).toBe(md5(first))
    })

    it('refuses to assemble one whose size is not what was stored', async () => {
      const part = big()
      await store.putPart('resized', 1, Readable.from([part]), sized(part))
      await expect(store.assemble('resized', [1], [part.length - 1])).rejects.toBeInstanceOf(StagedPartError)
    })

    it.runIf(storeCase.streamsParts)(
      'sends them on as they arrive: nothing staged, and the end only completes',
      async () => {
        const part = big()
        await store.putPart('straight', 1, Readable.from([part]), sized(part))
        const staged = await files()
        // Only the marker of the upload's multipart upload.
        expect(staged).toHaveLength(1)
        expect(staged[0]).toMatch(/^parts\/straight\/direct\/[0-9a-f]{32}\/.+$/)
        const plan = await store.planAssembly!('straight')
        expect(plan.key).toMatch(/^[0-9a-f]{32}$/)
        const info = await store.assemble('straight', [1], [part.length], plan.key!, plan)
        expect(info).toEqual({ key: plan.key, size: part.length })
        expect(md5(Buffer.concat(await (await store.open(info.key)).toArray()))).toBe(md5(part))
        await store.discardUpload('straight')
        expect(await files()).toEqual(storeCase.blobEntries(info.key))
      },
    )
  })

  it('streams a 50 MB blob without holding it in memory', async () => {
    const chunk = Buffer.alloc(64 * 1024, 7)
    const total = 50 * 1024 * 1024
    let sent = 0
    const source = new Readable({
      read() {
        if (sent >= total) this.push(null)
        else {
          sent += chunk.length
          this.push(chunk)
        }
      },
    })
    globalThis.gc?.()
    const before = process.memoryUsage().rss
    let peak = before
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 5)
    const info = await store.put(source)
    clearInterval(timer)
    peak = Math.max(peak, process.memoryUsage().rss)
    expect(info.size).toBe(total)
    expect(await store.size(info.key)).toBe(total)
    // Sanity only: a store that buffered the file would grow by 50 MB or more.
    expect(peak - before).toBeLessThan(30 * 1024 * 1024)
  })
})

describe('reading the local disk', () => {
  let root: string
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-blobs-'))
  })
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true })
  })

  const chunkSizes = async (stream: Readable) => {
    const sizes: number[] = []
    for await (const chunk of stream) sizes.push((chunk as Buffer).length)
    return sizes
  }

  it('reads 64 KiB at a time, or what the reader asks for, from a one-file and an assembled blob', async () => {
    const store = new LocalBlobStore(root)
    const bytes = crypto.randomBytes(2 * 1024 * 1024 + 5)
    const single = await store.putUnhashed(Readable.from([bytes]))
    await store.putPart('big', 1, Readable.from([bytes]))
    const assembled = await store.assemble('big', [1])
    for (const key of [single.key, assembled.key]) {
      const usual = await chunkSizes(await store.open(key))
      expect(Math.max(...usual)).toBe(64 * 1024)
      const asked = await chunkSizes(await store.open(key, undefined, { chunkBytes: 512 * 1024 }))
      expect(Math.max(...asked)).toBe(512 * 1024)
      expect(asked.reduce((a, b) => a + b, 0)).toBe(bytes.length)
      const ranged = await store.open(key, { start: 100, end: 700_000 }, { chunkBytes: 512 * 1024 })
      expect(Buffer.concat(await ranged.toArray()).equals(bytes.subarray(100, 700_001))).toBe(true)
      await expect(store.open(key, undefined, { chunkBytes: 0 })).rejects.toThrow(RangeError)
    }
  })
})

describe('S3: parts of one upload sent on by two processes at once', () => {
  const MiB = 1024 * 1024
  /** Two stores on one bucket and prefix, as two Wharf processes have them. */
  function twoProcesses() {
    const shared = `wharf-${crypto.randomBytes(4).toString('hex')}/`
    const make = () =>
      new S3BlobStore({
        client: createS3Client(s3.settings(bucket, shared), S3_CREDENTIALS),
        bucket,
        prefix: shared,
        tmpDir: path.join(os.tmpdir(), 'wharf-blobs-unused'),
      })
    return [make(), make()] as const
  }

  it('opens one multipart upload when each opens alone, so the end finds every part', async () => {
    const [a, b] = twoProcesses()
    // The upload's row lock, as PostgreSQL's is: one at a time.
    let held: Promise<unknown> = Promise.resolve()
    const opened: string[] = []
    const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
      const mine = held.then(() => {
        opened.push('open')
        return work()
      })
      held = mine.catch(() => undefined)
      return mine
    }
    const one = crypto.randomBytes(5 * MiB)
    const two = crypto.randomBytes(5 * MiB + 1)
    await Promise.all([
      a.putPart('shared', 1, Readable.from([one]), { length: one.length, exclusive }),
      b.putPart('shared', 2, Readable.from([two]), { length: two.length, exclusive }),
    ])
    // Each process had to look, neither knowing the upload yet.
    expect(opened).toHaveLength(2)
    const plan = await b.planAssembly('shared')
    expect(plan.directParts).toEqual([
      { partNumber: 1, size: one.length },
      { partNumber: 2, size: two.length },
    ])
    const info = await b.assemble('shared', [1, 2], [one.length, two.length], plan.key!, plan)
    const back = Buffer.concat(await (await a.open(info.key)).toArray())
    expect(back.equals(Buffer.concat([one, two]))).toBe(true)
  })
})
