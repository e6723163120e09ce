import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import { ERRORS } from '../../../api/error-factories.js'
import { ApiError } from '../../../api/errors.js'
import { nameOf, normalizePath, parentOf } from '../../../api/paths.js'
import type { BlobStore } from '../../../blobs/blob-store.js'
import type { Principal, ProtocolInterface } from '../../../identity/principal.js'
import type { DownloadService } from '../download-service.js'
import type { FileAccess } from '../file-access.js'
import type { FileOperations } from '../file-operations.js'
import type { FolderService } from '../folder-service.js'
import { normalizeNewPath } from '../new-paths.js'
import type { UploadService } from '../upload-service.js'
import { entryOfRow, type FsEntry, rootEntry } from './fs-entry.js'
import { type FileWriter, UploadWriter } from './upload-writer.js'

export type { FsEntry } from './fs-entry.js'
export type { FileWriter } from './upload-writer.js'

export interface FileSystemDeps {
  folders: FolderService
  downloads: DownloadService
  uploads: UploadService
  fileOps: FileOperations
  fileAccess: FileAccess
  blobs: BlobStore
  now: () => number
  /** Bytes per upload part of a writer (tests make it small to cross part boundaries). */
  writerPartBytes?: number | undefined
  /** A writer's upload lifetime without activity (PROTOCOL_UPLOAD_EXPIRY_SECONDS). */
  writerExpirySeconds?: number | undefined
}

/** The writers' upload lifetime when none is given (the setting's default). */
const WRITER_EXPIRY_SECONDS = 120

/** Inclusive byte range; `end` past the file's end is cut to it. */
export interface ReadRange {
  start?: number
  end?: number
  /** Bytes read from the store at a time (PROTOCOL_READ_BYTES for SFTP). */
  chunkBytes?: number
}

/**
 * What SFTP reads from the store at a time. An SFTP download answers small requests (32 KiB for
 * OpenSSH) from what was read ahead; with the store's usual 64 KiB each request pair waited for a
 * file read to come back through libuv's threads, and a download ran at about half the speed of
 * OpenSSH's. Streamed downloads (HTTP, FTP's data connection) keep the usual size: the socket's
 * own back-pressure paces them, and larger reads only left more spent buffers for the collector.
 */
export const PROTOCOL_READ_BYTES = 512 * 1024

/** A file opened for reading: its metadata now, its bytes on demand, at any offset. */
export interface ReadableFile {
  readonly entry: FsEntry
  /**
   * The bytes from `start` (default 0) to `end` (inclusive, default the last). A read from byte
   * 0 records the `read` Action and the Download webhook, once per opened file: one download is
   * one read however the client splits it, as for a ranged REST download.
   */
  read(range?: ReadRange): Promise<Readable>
}

const LIST_PAGE = 1000

/**
 * The file-system facade every transfer protocol (SFTP, FTP, WebDAV) stands on. It calls the
 * services the REST API uses, so a protocol gets the same folder permissions, API-key folder
 * restrictions and permission sets, the same Actions (with its interface) and the same webhooks
 * (with its protocol), and throws the same ApiErrors. Protocol code never reaches SQL or the
 * blob store but through it.
 */
export class FileSystem {
  constructor(private readonly deps: FileSystemDeps) {}

  /** The file tree as `principal` sees it through `iface`: every Action records that interface. */
  as(principal: Principal, iface: ProtocolInterface): UserFileSystem {
    return new UserFileSystem(this.deps, { ...principal, interface: iface })
  }
}

export class UserFileSystem {
  constructor(
    private readonly d: FileSystemDeps,
    readonly principal: Principal,
  ) {}

  /** A file or folder; the root is always a folder. */
  async stat(rawPath: string): Promise<FsEntry> {
    this.allowed()
    const path = normalizePath(rawPath)
    if (path === '') return rootEntry(this.d.now())
    try {
      return entryOfRow(await this.d.downloads.stat(this.principal, path))
    } catch (err) {
      // A folder above the caller's permissions may be entered to reach them (as REST lists it).
      if (!isRefusal(err) || !(await this.d.fileAccess.of(this.principal)).leadsTo(path)) throw err
      const name = nameOf(path).toLowerCase()
      for await (const e of this.list(parentOf(path))) if (e.name.toLowerCase() === name) return e
      throw err
    }
  }

  /** Every entry of a folder, read a page at a time (folders first is the client's business). */
  async *list(rawPath: string): AsyncGenerator<FsEntry> {
    this.allowed()
    const path = normalizePath(rawPath)
    // The caller's permissions are read once for the whole listing, not once a page.
    const access = await this.d.fileAccess.of(this.principal)
    let cursor: string | null = null
    do {
      const query = { per_page: LIST_PAGE, ...(cursor ? { cursor } : {}) }
      const page = await this.d.folders.listRows(this.principal, path, query, access)
      for (const row of page.items) yield entryOfRow(row)
      cursor = page.next
    } while (cursor)
  }

  /** Opens a file for reading (read permission checked now). A folder is bad-request/cannot-download-directory. */
  async openFile(rawPath: string): Promise<ReadableFile> {
    this.allowed()
    const download = await this.d.downloads.forCaller(this.principal, { path: rawPath })
    const { downloads } = this.d
    const ip = this.principal.ip
    const iface = this.principal.interface
    let recorded = false
    return {
      entry: entryOfRow(download.row),
      async read(range: ReadRange = {}) {
        const size = download.row.size
        const start = range.start ?? 0
        const end = Math.min(range.end ?? size - 1, size - 1)
        const stream =
          start > end
            ? Readable.from([])
            : await downloads.open(
                download.row,
                { start, end },
                range.chunkBytes === undefined ? {} : { chunkBytes: range.chunkBytes },
                iface,
              )
        if (start === 0 && !recorded) {
          recorded = true
          try {
            await downloads.recordRead(download, ip)
          } catch (err) {
            stream.destroy()
            throw err
          }
        }
        return stream
      },
    }
  }

  /**
   * A file's checksum in hex, as `md5sum`/`sha1sum`/`sha256sum` print it: read permission, as
   * for a download. The stored MD5 or SHA-256 when there is one; otherwise (SHA-1, or a sum not
   * computed yet) the bytes are hashed as they stream from the store. No `read` Action: no byte
   * goes to the client.
   */
  async checksum(rawPath: string, algorithm: 'md5' | 'sha1' | 'sha256'): Promise<string> {
    this.allowed()
    const { row } = await this.d.downloads.forCaller(this.principal, { path: rawPath })
    if (algorithm === 'md5' && row.md5) return row.md5
    if (algorithm === 'sha256' && row.sha256) return row.sha256
    const hash = crypto.createHash(algorithm)
    if (row.size === 0) return hash.digest('hex')
    for await (const chunk of await this.d.downloads.open(row)) hash.update(chunk as Buffer)
    return hash.digest('hex')
  }

  /** `openFile(path)` then `read(range)`: the bytes of one file (or a range of them). */
  async openRead(rawPath: string, range: ReadRange = {}): Promise<Readable> {
    return (await this.openFile(rawPath)).read(range)
  }

  /**
   * A new file's content (or a file's new content, with `overwrite`), streamed into storage as
   * it arrives and published on `commit()`. Permission, a missing parent folder (unless
   * `mkdirParents`) and a folder in the way are refused now, before any byte is sent.
   */
  async createWriter(
    rawPath: string,
    opts: { overwrite?: boolean; mkdirParents?: boolean } = {},
  ): Promise<FileWriter> {
    this.allowed()
    const path = normalizeNewPath(rawPath, 'path')
    if (opts.overwrite === false) {
      const there = await this.exists(path)
      if (there) throw ERRORS.destinationExists(`${there.path} already exists`)
    }
    const expirySeconds = this.d.writerExpirySeconds ?? WRITER_EXPIRY_SECONDS
    const { upload } = await this.d.uploads.open(this.principal, path, {
      mkdirParents: opts.mkdirParents ?? false,
      expirySeconds,
    })
    return new UploadWriter(this.d.uploads, this.principal, path, upload, {
      partBytes: this.d.writerPartBytes,
      expirySeconds,
    })
  }

  /** Creates a folder; its parent must exist unless `mkdirParents`. */
  async mkdir(rawPath: string, opts: { mkdirParents?: boolean } = {}): Promise<FsEntry> {
    this.allowed()
    const input = { mkdir_parents: opts.mkdirParents === true }
    return entryOfRow(await this.d.folders.createFolder(this.principal, rawPath, input))
  }

  /** Deletes a file, or a folder (which must be empty unless `recursive`). */
  async delete(rawPath: string, opts: { recursive?: boolean } = {}): Promise<void> {
    this.allowed()
    await this.d.fileOps.delete(this.principal, rawPath, { recursive: opts.recursive === true })
  }

  /** Renames or moves (webhook `Rename` within a folder, `Move` across folders). */
  async rename(from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<void> {
    this.allowed()
    await this.d.fileOps.move(this.principal, from, { destination: to, overwrite: opts.overwrite === true })
  }

  async copy(from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<void> {
    this.allowed()
    await this.d.fileOps.copy(this.principal, from, { destination: to, overwrite: opts.overwrite === true })
  }

  /**
   * Sets the modification time the client keeps for a file or folder (epoch ms; shown in every
   * listing instead of Wharf's own): write permission, as for an upload.
   */
  async setModifiedTime(rawPath: string, mtimeMs: number): Promise<void> {
    this.allowed()
    await this.d.fileOps.setProvidedMtime(this.principal, rawPath, mtimeMs)
  }

  /** The entry at a path, or null; refusals still throw. */
  async exists(rawPath: string): Promise<FsEntry | null> {
    try {
      return await this.stat(rawPath)
    } catch (err) {
      if (err instanceof ApiError && err.type === 'not-found/file-not-found') return null
      throw err
    }
  }

  /** A key with permission set `none` reaches no file, whatever the protocol (as in REST). */
  private allowed(): void {
    if (this.principal.permissionSet === 'none') {
      throw ERRORS.fullPermissionRequired('This API key has permission set "none": it can only read itself')
    }
  }
}

function isRefusal(err: unknown): boolean {
  return err instanceof ApiError && err.type.startsWith('not-authorized/')
}
