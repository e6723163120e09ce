import { Readable } from 'node:stream'
import type { FileRow } from '../../src/modules/files/file-repository.js'
import type { TestServer } from './server.js'

/**
 * Factories for files and folders straight in the database and blob store (not through the
 * upload API): a file row with its blob, folders created for every missing parent.
 */
const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '')
const nameOf = (p: string) => p.slice(p.lastIndexOf('/') + 1)

async function insertRow(
  s: TestServer,
  path: string,
  fields: Partial<FileRow> & Pick<FileRow, 'type'>,
): Promise<FileRow> {
  const now = fields.mtime ?? Date.now()
  return s.container.db
    .insertInto('files')
    .values({
      site_id: s.container.site.id,
      path,
      path_lower: path.toLowerCase(),
      parent_lower: parentOf(path).toLowerCase(),
      name: nameOf(path),
      size: 0,
      custom_metadata: '{}',
      created_at: now,
      mtime: now,
      ...fields,
    } as any)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** A folder and any missing folders above it. */
export async function makeFolder(s: TestServer, path: string): Promise<FileRow> {
  const parts = path.split('/')
  let row: FileRow | undefined
  for (let i = 1; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('/')
    row = await findRow(s, p)
    if (!row) row = await insertRow(s, p, { type: 'directory' })
  }
  return row!
}

/** A file with these bytes (and its parent folders). */
export async function makeFile(
  s: TestServer,
  path: string,
  content: string | Buffer = `content of ${path}`,
  fields: Partial<FileRow> = {},
): Promise<FileRow> {
  if (parentOf(path) !== '') await makeFolder(s, parentOf(path))
  const blob = await s.container.blobs.put(Readable.from([Buffer.from(content)]))
  return insertRow(s, path, {
    type: 'file',
    size: blob.size,
    blob_key: blob.key,
    md5: blob.md5,
    crc32: blob.crc32,
    ...fields,
  })
}

export async function findRow(s: TestServer, path: string): Promise<FileRow | undefined> {
  return s.container.db
    .selectFrom('files')
    .selectAll()
    .where('site_id', '=', s.container.site.id)
    .where('path_lower', '=', path.toLowerCase())
    .executeTakeFirst()
}

/** Every path stored at or under `folder`, sorted (lower-case). */
export async function pathsUnder(s: TestServer, folder: string): Promise<string[]> {
  const rows = await s.container.db
    .selectFrom('files')
    .select('path')
    .where('site_id', '=', s.container.site.id)
    .execute()
  const f = folder.toLowerCase()
  return rows
    .map((r) => r.path)
    .filter((p) => p.toLowerCase() === f || p.toLowerCase().startsWith(`${f}/`))
    .sort()
}

/** The bytes of a blob, as text. */
export async function blobText(s: TestServer, key: string): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of await s.container.blobs.open(key)) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString()
}

/** Keys queued in blob_garbage. */
export async function garbageKeys(s: TestServer): Promise<string[]> {
  const rows = await s.container.db.selectFrom('blob_garbage').select('blob_key').execute()
  return rows.map((r) => r.blob_key)
}

/** The newest Action of this type. */
export async function lastAction(s: TestServer, action: string) {
  return s.container.db
    .selectFrom('actions')
    .selectAll()
    .where('action', '=', action)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow()
}
