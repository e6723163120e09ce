import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'

/** A backup or restore that cannot go on, said in one line naming what to change. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'BackupError'
  }
}

/** What `manifest.json` says of a backup; `SHA256SUMS` beside it lists every file with its checksum. */
export interface BackupManifest {
  format: 'wharf-backup'
  version: 1
  created_at: string
  wharf_version: string
  database: {
    dialect: 'sqlite' | 'postgres'
    /** `wharf.sqlite` (SQLite's online backup) or `database.dump` (pg_dump's custom format). */
    file: string
    /** The PostgreSQL schema dumped, when not the whole database. */
    schema: string | null
    /** The migrations the database had, in order. */
    migrations: string[]
  }
  store: {
    kind: 'disk' | 's3'
    /** True: the blobs are in the backup under `storage/blobs`. False: `objects.txt` names them in the bucket. */
    copied: boolean
    bucket: string | null
    prefix: string | null
  }
  blobs: {
    /** Blobs the database refers to (files' contents and export files). */
    count: number
    bytes: number
    /** Keys the database refers to that the store did not have when the backup was taken. */
    missing: string[]
  }
}

export const MANIFEST = 'manifest.json'
export const SUMS = 'SHA256SUMS'
export const OBJECTS = 'objects.txt'
export const SQLITE_FILE = 'wharf.sqlite'
export const PG_DUMP_FILE = 'database.dump'

/** A blob's place under a store's root: `blobs/ab/cd/<key>`. */
export const blobPath = (key: string) => path.join('blobs', key.slice(0, 2), key.slice(2, 4), key)

export async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash('sha256')
  await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), hash)
  return hash.digest('hex')
}

/** Whether a folder is missing or holds nothing. */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await fsp.readdir(dir)).length === 0
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true
    throw err
  }
}

/** The full path of a program on PATH, or null. */
export function findOnPath(program: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env['PATH'] ?? '').split(path.delimiter)) {
    if (!dir) continue
    const candidate = path.join(dir, program)
    try {
      fs.accessSync(candidate, fs.constants.X_OK)
      return candidate
    } catch {}
  }
  return null
}

/** Runs one of PostgreSQL's client programs; its stderr becomes the error (never the URL's password). */
export function runTool(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, maxBuffer: 16 << 20 }, (err, _stdout, stderr) => {
      if (!err) return resolve()
      reject(new BackupError(`${path.basename(file)} failed: ${String(stderr).trim() || err.message}`))
    })
  })
}

/**
 * PostgreSQL's client programs take the connection from PG* variables rather than from a URL on
 * their command line, which any user of the machine could read (with its password) in the list
 * of processes.
 */
export function pgEnvironment(url: string): NodeJS.ProcessEnv {
  const u = new URL(url)
  const env: NodeJS.ProcessEnv = { ...process.env }
  if (u.hostname) env['PGHOST'] = decodeURIComponent(u.hostname.replace(/^\[|\]$/g, ''))
  if (u.port) env['PGPORT'] = u.port
  if (u.username) env['PGUSER'] = decodeURIComponent(u.username)
  if (u.password) env['PGPASSWORD'] = decodeURIComponent(u.password)
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''))
  if (database) env['PGDATABASE'] = database
  const sslmode = u.searchParams.get('sslmode')
  if (sslmode) env['PGSSLMODE'] = sslmode
  return env
}

export function requireTool(program: string): string {
  const found = findOnPath(program)
  if (!found)
    throw new BackupError(
      `${program} was not found on PATH: install PostgreSQL's client programs (the server's major version or newer; Debian: postgresql-client) and try again`,
    )
  return found
}
