import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import type pg from 'pg'
import { linkOrCopy, syncDir } from '../blobs/disk/durable-files.js'
import {
  BackupError,
  type BackupManifest,
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
import type { SiteLocation } from './site-backup.js'

const load = createRequire(import.meta.url)

export interface RestoreReport {
  manifest: BackupManifest
  /** Files of the backup checked against SHA256SUMS. */
  checkedFiles: number
  /** Blobs put into the disk store. */
  restoredBlobs: number
  /** On S3: objects the backup names that the bucket does not have now. */
  missingObjects: string[]
}

/**
 * `wharf restore DIR`: a backup into an empty site. Every file of the backup is checked against
 * its SHA-256 before anything is written; the target must have no database (no SQLite file; no
 * table in the PostgreSQL schema) and no blobs, else nothing is touched. On S3 the objects the
 * backup names are looked for in the bucket, and the ones missing are reported (the bucket keeps
 * them by its own versioning or replication; restore those first).
 */
export async function restoreSite(
  site: SiteLocation,
  dir: string,
  objectSize?: (objectKey: string) => Promise<number | null>,
): Promise<RestoreReport> {
  const { config } = site
  const source = path.resolve(dir)
  const manifest = await readManifest(source)
  const dialect = config.databaseUrl ? 'postgres' : 'sqlite'
  if (manifest.database.dialect !== dialect)
    throw new BackupError(
      `The backup holds a ${manifest.database.dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} database: ${
        manifest.database.dialect === 'postgres'
          ? 'set DATABASE_URL to an empty PostgreSQL database'
          : 'unset DATABASE_URL'
      } to restore it`,
    )
  if (manifest.store.kind !== config.blobs.store)
    throw new BackupError(
      `The backup's files are in ${manifest.store.kind === 's3' ? 'an S3 bucket' : 'the disk store'}: set BLOB_STORE=${manifest.store.kind} to restore it`,
    )

  const checkedFiles = await checkSums(source)

  const storage = path.join(config.dataDir, 'storage')
  if (manifest.store.copied && !(await isEmptyDir(path.join(storage, 'blobs'))))
    throw new BackupError(`${path.join(storage, 'blobs')} is not empty: restore into an empty DATA_DIR`)
  if (config.databaseUrl) await restorePostgres(config.databaseUrl, site.databaseSchema, source)
  else await restoreSqlite(config.dataDir, source)

  const restored = new Set<string>()
  if (manifest.store.copied) {
    const from = path.join(source, 'storage')
    for (const rel of await listedFiles(source)) {
      if (!rel.startsWith('storage/')) continue
      const file = rel.slice('storage/'.length)
      const dest = path.join(storage, file)
      await fsp.mkdir(path.dirname(dest), { recursive: true })
      await linkOrCopy(path.join(from, file), dest)
      // blobs/ab/cd/<key>, or blobs/ab/cd/<key>/<part> for a blob of parts.
      restored.add(file.split('/')[3] ?? file)
    }
    if (restored.size > 0) await syncDir(path.join(storage, 'blobs'))
  }

  const missingObjects: string[] = []
  if (!manifest.store.copied && objectSize) {
    const text = await fsp.readFile(path.join(source, OBJECTS), 'utf8')
    for (const line of text.split('\n')) {
      if (!line) continue
      const [objectKey = '', size = ''] = line.split('\t')
      if ((await objectSize(objectKey)) !== Number(size)) missingObjects.push(objectKey)
    }
  }
  return { manifest, checkedFiles, restoredBlobs: restored.size, missingObjects }
}

export async function readManifest(source: string): Promise<BackupManifest> {
  let manifest: BackupManifest
  try {
    manifest = JSON.parse(await fsp.readFile(path.join(source, MANIFEST), 'utf8')) as BackupManifest
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new BackupError(
        `${source} is not a Wharf backup (no ${MANIFEST}; a backup that did not finish has none)`,
      )
    throw new BackupError(`${path.join(source, MANIFEST)} cannot be read: ${(err as Error).message}`)
  }
  if (manifest.format !== 'wharf-backup' || manifest.version !== 1)
    throw new BackupError(
      `${source} is not a Wharf backup this version can restore (format ${manifest.format}, version ${manifest.version})`,
    )
  return manifest
}

/** The files SHA256SUMS lists, relative to the backup's folder. */
async function listedFiles(source: string): Promise<string[]> {
  const text = await fsp.readFile(path.join(source, SUMS), 'utf8')
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(66))
}

/** Checks every file against SHA256SUMS (the format `sha256sum -c` reads); the count checked. */
async function checkSums(source: string): Promise<number> {
  const text = await fsp.readFile(path.join(source, SUMS), 'utf8').catch(() => {
    throw new BackupError(`${path.join(source, SUMS)} is missing: the backup is incomplete`)
  })
  const bad: string[] = []
  let n = 0
  for (const line of text.split('\n')) {
    if (!line) continue
    const expected = line.slice(0, 64)
    const rel = line.slice(66)
    if (rel.split('/').includes('..') || path.isAbsolute(rel))
      throw new BackupError(`${SUMS} names ${rel}, outside the backup`)
    n++
    const actual = await sha256File(path.join(source, rel)).catch(() => 'missing')
    if (actual !== expected) bad.push(actual === 'missing' ? `${rel} (missing)` : rel)
  }
  if (bad.length > 0)
    throw new BackupError(
      `The backup is damaged: ${bad.length} file(s) do not match ${SUMS}: ${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ', …' : ''}`,
    )
  return n
}

async function restoreSqlite(dataDir: string, source: string): Promise<void> {
  const dest = path.join(dataDir, SQLITE_FILE)
  if (fs.existsSync(dest)) throw new BackupError(`${dest} exists: restore into an empty DATA_DIR`)
  await fsp.mkdir(dataDir, { recursive: true })
  const tmp = `${dest}.restoring`
  await fsp.copyFile(path.join(source, SQLITE_FILE), tmp)
  const handle = await fsp.open(tmp, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
  await fsp.rename(tmp, dest)
  await syncDir(dataDir)
}

async function restorePostgres(url: string, schema: string | undefined, source: string): Promise<void> {
  const pgRestore = requireTool('pg_restore')
  const { Client } = load('pg') as typeof pg
  const client = new Client({ connectionString: url })
  await client.connect()
  try {
    const found = await client.query<{ n: string }>(
      'SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1',
      [schema ?? 'public'],
    )
    if (Number(found.rows[0]?.n ?? 0) > 0)
      throw new BackupError(
        `The database already has tables${schema ? ` in schema ${schema}` : ''}: restore into an empty database`,
      )
    // The dump creates the schema it holds; an empty one of the same name is made again.
    if (schema) await client.query(`DROP SCHEMA IF EXISTS "${schema}"`)
  } finally {
    await client.end()
  }
  const env = pgEnvironment(url)
  // Without --dbname pg_restore writes SQL to stdout instead of restoring.
  const database = env['PGDATABASE'] ?? env['PGUSER'] ?? 'postgres'
  await runTool(
    pgRestore,
    [
      '--no-owner',
      '--no-privileges',
      '--exit-on-error',
      '--single-transaction',
      `--dbname=${database}`,
      path.join(source, PG_DUMP_FILE),
    ],
    env,
  )
}
