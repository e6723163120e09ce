import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import { linkOrCopy } from '../blobs/disk/durable-files.js'
import type { Config } from '../config.js'
import {
  BackupError,
  type BackupManifest,
  blobPath,
  isEmptyDir,
  MANIFEST,
  OBJECTS,
  PG_DUMP_FILE,
  pgEnvironment,
  requireTool,
  runTool,
  SQLITE_FILE,
  SUMS,
  sha256File,
} from './backup-files.js'
import { wharfVersion } from './version.js'

const load = createRequire(import.meta.url)

/** Where a site is: its settings, and (tests) the PostgreSQL schema it lives in. */
export interface SiteLocation {
  config: Config
  databaseSchema?: string | undefined
}

export interface BackupReport {
  dir: string
  manifest: BackupManifest
}

/** A blob the database refers to, with the size it records. */
interface BlobRef {
  key: string
  size: number
}

// Files' contents and export files: every blob a restored site needs. Queued deletions, staged
// parts and temporary files are not part of a site.
const REFS_SQL = `SELECT blob_key AS key, size FROM files WHERE blob_key IS NOT NULL
  UNION SELECT blob_key AS key, COALESCE(result_bytes, 0) AS size FROM exports WHERE blob_key IS NOT NULL`
const MIGRATIONS_SQL = 'SELECT name FROM kysely_migration ORDER BY name'

/**
 * `wharf backup DIR`: a consistent copy of a site that may be running. The database first, as of
 * one moment (SQLite's online backup API; pg_dump in a snapshot exported from a transaction that
 * also reads which blobs the database refers to), then those blobs: hard links to the disk store's
 * files where DIR is on the same file system (a blob is never written in place), copies
 * otherwise; on S3 a list of the objects (the bucket is kept by its own versioning). A blob the
 * site deletes after the snapshot stays in the store for the janitor's grace period (an hour), so
 * the links are made long before it goes. `manifest.json` is written last: a folder without it is
 * not a backup.
 */
export async function backupSite(site: SiteLocation, dir: string): Promise<BackupReport> {
  const { config } = site
  const target = path.resolve(dir)
  if (!(await isEmptyDir(target)))
    throw new BackupError(`${target} is not empty: back up into a new or empty folder`)
  await fsp.mkdir(target, { recursive: true })

  const snapshot = config.databaseUrl
    ? await dumpPostgres(config.databaseUrl, site.databaseSchema, target)
    : await copySqlite(config.dataDir, target)

  const sums: string[] = []
  const sum = async (rel: string) => sums.push(`${await sha256File(path.join(target, rel))}  ${rel}`)
  await sum(snapshot.file)

  const store = config.blobs.store
  const missing: string[] = []
  let bytes = 0
  if (store === 'disk') {
    const storage = path.join(config.dataDir, 'storage')
    for (const ref of snapshot.refs) {
      const rels = await linkBlob(storage, path.join(target, 'storage'), ref.key)
      if (rels === null) {
        missing.push(ref.key)
        continue
      }
      bytes += ref.size
      for (const rel of rels) await sum(`storage/${rel}`)
    }
  } else {
    const prefix = config.blobs.s3?.prefix ?? ''
    const lines = snapshot.refs.map((r) => `${prefix}blobs/${r.key}\t${r.size}`)
    await fsp.writeFile(path.join(target, OBJECTS), lines.length ? `${lines.join('\n')}\n` : '')
    await sum(OBJECTS)
    bytes = snapshot.refs.reduce((n, r) => n + r.size, 0)
  }
  await fsp.writeFile(path.join(target, SUMS), sums.length ? `${sums.join('\n')}\n` : '')

  const manifest: BackupManifest = {
    format: 'wharf-backup',
    version: 1,
    created_at: new Date().toISOString(),
    wharf_version: wharfVersion(),
    database: {
      dialect: config.databaseUrl ? 'postgres' : 'sqlite',
      file: snapshot.file,
      schema: site.databaseSchema ?? null,
      migrations: snapshot.migrations,
    },
    store: {
      kind: store,
      copied: store === 'disk',
      bucket: config.blobs.s3?.bucket ?? null,
      prefix: config.blobs.s3?.prefix ?? null,
    },
    blobs: { count: snapshot.refs.length - missing.length, bytes, missing },
  }
  const tmp = path.join(target, `${MANIFEST}.tmp`)
  await fsp.writeFile(tmp, `${JSON.stringify(manifest, null, 2)}\n`)
  await fsp.rename(tmp, path.join(target, MANIFEST))
  return { dir: target, manifest }
}

interface Snapshot {
  file: string
  refs: BlobRef[]
  migrations: string[]
}

async function copySqlite(dataDir: string, target: string): Promise<Snapshot> {
  const source = path.join(dataDir, SQLITE_FILE)
  if (!fs.existsSync(source)) throw new BackupError(`There is no Wharf database at ${source}: check DATA_DIR`)
  const Sqlite = load('better-sqlite3') as typeof SQLite
  const live = new Sqlite(source, { fileMustExist: true })
  try {
    live.pragma('busy_timeout = 5000')
    // The first step only opens the backup; the next copies every page at once, as of one
    // moment (a write by the server between steps would start a step-by-step backup over).
    await live.backup(path.join(target, SQLITE_FILE), { progress: () => 0x7fffffff })
  } finally {
    live.close()
  }
  const copy = new Sqlite(path.join(target, SQLITE_FILE), { readonly: true, fileMustExist: true })
  try {
    const refs = copy.prepare(REFS_SQL).all() as BlobRef[]
    const migrations = copy.prepare(MIGRATIONS_SQL).pluck().all() as string[]
    return { file: SQLITE_FILE, refs, migrations }
  } finally {
    copy.close()
  }
}

async function dumpPostgres(url: string, schema: string | undefined, target: string): Promise<Snapshot> {
  const pgDump = requireTool('pg_dump')
  const { Client } = load('pg') as typeof pg
  const client = new Client({
    connectionString: url,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  })
  await client.connect()
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const exported = await client.query<{ id: string }>('SELECT pg_export_snapshot() AS id')
    const snapshotId = exported.rows[0]?.id ?? ''
    // pg_dump reads the same snapshot as this transaction, so the dump and the blob list agree.
    await runTool(
      pgDump,
      [
        '--format=custom',
        '--no-owner',
        '--no-privileges',
        `--snapshot=${snapshotId}`,
        ...(schema ? [`--schema=${schema}`] : []),
        `--file=${path.join(target, PG_DUMP_FILE)}`,
      ],
      pgEnvironment(url),
    )
    const refs = (await client.query<{ key: string; size: string | number }>(REFS_SQL)).rows.map((r) => ({
      key: r.key,
      size: Number(r.size),
    }))
    const migrations = (await client.query<{ name: string }>(MIGRATIONS_SQL)).rows.map((r) => r.name)
    await client.query('COMMIT')
    return { file: PG_DUMP_FILE, refs, migrations }
  } finally {
    await client.end()
  }
}

/**
 * Links (or copies) one blob of a disk store into another store's folder: a file, or a folder of
 * parts with their sizes. Returns the paths written, relative to `to`; null when the blob is gone.
 */
async function linkBlob(from: string, to: string, key: string): Promise<string[] | null> {
  const rel = blobPath(key)
  const source = path.join(from, rel)
  let stat: fs.Stats
  try {
    stat = await fsp.stat(source)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  const names = stat.isDirectory() ? (await fsp.readdir(source)).sort() : [null]
  const written: string[] = []
  for (const name of names) {
    const file = name === null ? rel : path.join(rel, name)
    await fsp.mkdir(path.dirname(path.join(to, file)), { recursive: true })
    try {
      await linkOrCopy(path.join(from, file), path.join(to, file))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    written.push(file.split(path.sep).join('/'))
  }
  return written
}
