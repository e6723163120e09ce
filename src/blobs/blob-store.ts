import type { Readable } from 'node:stream'

/** The checksums the File resource shows. */
export interface BlobChecksums {
  /** 32 lower-case hex characters. */
  md5: string
  /** 8 lower-case hex characters (CRC-32, as zlib computes it). */
  crc32: string
  /** 64 lower-case hex characters; not part of the File resource (file-aware webhooks show it). */
  sha256: string
}

/** A stored blob: its key in the store and its size. */
export interface StoredBlob {
  key: string
  size: number
}

/** A stored blob with its checksums (computed on the way in by a single streamed `put`). */
export interface BlobInfo extends StoredBlob, BlobChecksums {}

/** Inclusive byte range, as in an HTTP `Range: bytes=start-end` header. */
export interface ByteRange {
  start: number
  end: number
}

/** Runs work alone among the processes sharing the store, for one upload (putPart). */
export type Exclusive = <T>(work: () => Promise<T>) => Promise<T>

/** How a blob is read. */
export interface ReadOptions {
  /**
   * Bytes a store that reads files reads at a time (local disk: 64 KiB unless asked). A reader
   * that answers each small request from what was read ahead (SFTP) asks for more: with 64 KiB
   * its requests waited on one file read after another.
   */
  chunkBytes?: number
}

/**
 * What a store found of an upload before it is assembled (planAssembly): the key the blob must
 * get, and the parts sent straight to the store.
 */
export interface AssemblyPlan {
  /**
   * The key `assemble` must use, where the store fixed it when the upload began (S3 in direct mode
   * aims its multipart upload at the blob it will become); null where any fresh key will do.
   */
  key: string | null
  /** The parts sent to the upload's directPartUrls so far, in part order (none: empty). */
  directParts: { partNumber: number; size: number }[]
}

/** The blob does not exist (never did, or was deleted). */
export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`Blob ${key} not found`)
    this.name = 'BlobNotFoundError'
  }
}

/**
 * A staged part is missing, or not the size it had when it was stored (a crash can lose bytes
 * that were never flushed): the upload cannot be assembled until the part is sent again.
 */
export class StagedPartError extends Error {
  constructor(
    readonly ref: string,
    readonly partNumber: number,
    why: string,
  ) {
    super(`Part ${partNumber} of upload ${ref} ${why}`)
    this.name = 'StagedPartError'
  }
}

/** A part's bytes ran past the limit the caller set; nothing of it was kept. */
export class BlobTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`More than ${limit} bytes`)
    this.name = 'BlobTooLargeError'
  }
}

/**
 * Where file bytes live. Callers never see paths or buckets: blobs are immutable, named by an
 * opaque key the store chooses, and the database says which file uses which blob. Everything
 * streams; nothing holds a whole file in memory. A local-disk store is the default; an
 * S3-compatible store can implement the same interface (parts map onto multipart uploads).
 *
 * Upload refs and part numbers come from the upload service: refs match /^[A-Za-z0-9_-]{1,64}$/,
 * part numbers are 1…10000; anything else is refused with an Error.
 *
 * `put` and `putPart` consume their input stream; when they fail (BlobTooLargeError included) they
 * destroy it, which for an HTTP request body closes the connection. A route that wants to answer
 * with an error instead checks Content-Length against the limit before calling them.
 */
export interface BlobStore {
  /**
   * Streams `data` into a new blob (atomic: the blob appears complete or not at all), under `key`
   * when one is given (from `newKey`, as for `assemble`).
   *
   * Every method that makes a blob (put, putUnhashed, putSegments, assemble, copy) takes such a
   * key, so that the caller can record it durably (queue it for deletion) before the blob exists:
   * a crash right after the write then leaves a key someone will delete, not bytes nothing names.
   * A key that is not one of the store's is an Error, refused before anything is written.
   */
  put(data: Readable, opts?: { maxBytes?: number; key?: string }): Promise<BlobInfo>
  /**
   * The same without checksums, for blobs no one asks the md5 or CRC of (export files): hashing a
   * gigabyte costs seconds of CPU.
   */
  putUnhashed(data: Readable, opts?: { key?: string }): Promise<StoredBlob>
  /**
   * A blob written as `count` files at once, each by its own writer (another thread, say), and
   * published as one: their concatenation, in order. `write` gets the files' paths, creates and
   * fills them, and resolves once it is done; the blob appears complete or not at all. Unhashed.
   * Only the export of two halves at once uses it (a SQLite export of a million records in
   * 5.1–6.4 s instead of 6.9–7.8 s: docs/performance.md, "Two halves at once"); the plain way,
   * one stream, is putUnhashed, which every smaller export takes. On disk the files become the
   * blob's segments without a copy.
   */
  putSegments(
    count: number,
    write: (files: string[]) => Promise<void>,
    opts?: { key?: string },
  ): Promise<StoredBlob>
  /**
   * Streams one part of an upload into staging (not yet flushed to disk: see assemble), replacing
   * an earlier copy of the same part only once this one is complete. A failed or aborted stream leaves the earlier copy (or none).
   * `length`: the part's size, where the sender said it before the first byte (a request's
   * Content-Length, which the HTTP parser holds the body to); a store may then send the part on
   * as it arrives (S3: into the upload's multipart upload). A StagedPartError says the store's own
   * upload is gone (ended or given up). `exclusive` runs `work` so that no other process sharing
   * the store runs the same upload's at once (the upload's row lock): a store that opens something
   * of its own per upload (S3's multipart upload) opens it within, so that two processes given
   * parts of one upload at the same moment never open two.
   */
  putPart(
    ref: string,
    partNumber: number,
    data: Readable,
    opts?: { maxBytes?: number; length?: number; exclusive?: Exclusive },
  ): Promise<{ size: number }>
  /**
   * Makes a new blob of the staged parts, in the order given (their concatenation), flushed to
   * disk. Staged parts are durable only from here: putPart does not flush them, which keeps many
   * parts in flight cheap. With `sizes` (what each part measured when it was stored), a part lost
   * or cut short by a crash is a StagedPartError, as is a missing part. The parts stay staged
   * until discardUpload; restaging one does not alter the blob. Where parts were sent straight to
   * the store (directPartUrl), those are the parts assembled; given the `plan` this store's
   * planAssembly made for the upload, it assembles the parts listed there without looking for
   * the upload or listing its parts again. No checksums: reading a large upload back to hash it
   * costs seconds of CPU per gigabyte, so they are computed afterwards (`checksums`), outside the
   * request. With `key` (from `newKey`), the blob gets that key, so
   * that the caller can record it durably before the blob exists (a crash right after assembling
   * then leaves a key someone will delete, not an object nothing names).
   */
  assemble(
    ref: string,
    partNumbers: number[],
    sizes?: number[],
    key?: string,
    plan?: AssemblyPlan,
  ): Promise<StoredBlob>
  /** A fresh key no blob has, for the methods that make a blob. */
  newKey(): string
  /**
   * Optional, where clients can send parts straight to the store (directPartUrl): one look at
   * the upload before it is assembled, for `assemble` (see AssemblyPlan). Throws StagedPartError
   * when the store's own upload is gone (completed or given up).
   */
  planAssembly?(ref: string): Promise<AssemblyPlan>
  /**
   * The md5, CRC-32 and SHA-256 of a blob (and its size), by reading it once from start to end. Throws
   * BlobNotFoundError; stops with the signal's reason once it is aborted.
   */
  checksums(key: string, opts?: { signal?: AbortSignal }): Promise<BlobChecksums & { size: number }>
  /** Deletes every staged part of an upload, and gives up the parts sent directly (idempotent). */
  discardUpload(ref: string): Promise<void>
  /**
   * Optional: a store clients can reach themselves (S3 in direct mode) takes parts and serves bytes
   * without Wharf in between. The local disk store has none of the three.
   *
   * A URL to which a client PUTs part `partNumber` of upload `ref`, valid `expiresIn` seconds. The
   * first call for a ref opens the store's own upload: make it before handing the ref out, so that
   * two calls for a new ref never race.
   */
  directPartUrl?(ref: string, partNumber: number, expiresIn: number): Promise<string>
  /**
   * A URL serving the blob (Range included) as an attachment named `fileName`, valid `expiresIn`
   * seconds. It keeps serving the blob's bytes until they are deleted.
   */
  directDownloadUrl?(key: string, opts: { fileName: string; expiresIn: number }): Promise<string>
  /** The origins those URLs lead to (for a page's Content-Security-Policy). */
  directOrigins?(): Promise<string[]>
  /** Refs with staged parts and when they last changed (epoch ms), for the janitor. */
  stagedUploads(): AsyncIterable<{ ref: string; modifiedAt: number }>
  /** Reads a blob, or the inclusive byte range of it. Throws BlobNotFoundError. */
  open(key: string, range?: ByteRange, opts?: ReadOptions): Promise<Readable>
  /** Size of a blob, or null if it does not exist. */
  size(key: string): Promise<number | null>
  /**
   * A new blob with the same bytes (copies are independent: deleting one keeps the other), under
   * `dest` when one is given (from `newKey`); its key. Throws BlobNotFoundError for the source.
   */
  copy(key: string, dest?: string): Promise<string>
  /** Deletes a blob (idempotent). */
  delete(key: string): Promise<void>
  /** Deletes temporary files older than the given age left by a crash mid-write. */
  sweepTemporary(olderThanMs: number): Promise<number>
  /**
   * The key of every blob the store holds, in no set order (`wharf verify` compares them with the
   * database's). Staged parts and temporary files are not blobs.
   */
  keys(): AsyncIterable<string>
}
