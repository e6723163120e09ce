import crypto from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import { FILE_LINK_MS, signDownloadToken } from '../../security/signed-link.js'
import type { ClaimedRow } from '../outbox-claims.js'

/** Operations whose `path` is a file that exists after the action. */
const WITH_FILE = new Set(['Upload', 'Download', 'Copy', 'Move', 'Rename'])

export interface FileLinks {
  /** The site's signing secret (the one its download links are signed with). */
  secret(siteId: number): Promise<string>
  /** BASE_URL, for the links. */
  baseUrl(): string
}

/** A file version's id as listeners see it: stable per version, not the store's key. */
const versionIdOf = (blobKey: string) =>
  `ver_${crypto.createHash('sha256').update(blobKey).digest('base64url').slice(0, 22)}`

/**
 * The fields a file-aware endpoint gets beside the spec's: the file's size, SHA-256 (null until
 * the checksum job has read the version's bytes), version id, and a download link signed now,
 * valid FILE_LINK_MS, to the bytes of that version. The version is the file's at the first attempt, fixed in the
 * notification, so a retry days later still links to the bytes that fired it. Undefined for an
 * operation without a file, or a file gone before the first attempt.
 */
export async function fileFields(
  db: Kysely<Database>,
  links: FileLinks,
  row: ClaimedRow,
  now: number,
): Promise<Record<string, string | number | null> | undefined> {
  if (!WITH_FILE.has(row.operation) || row.path === '') return undefined
  let n = await db
    .selectFrom('webhook_notifications')
    .select(['file_id', 'file_blob_key', 'file_size', 'file_sha256'])
    .where('id', '=', row.id)
    .executeTakeFirst()
  const fresh = !n?.file_blob_key
  if (!n?.file_blob_key) {
    const file = await db
      .selectFrom('files')
      .select(['id', 'blob_key', 'size', 'sha256'])
      .where('site_id', '=', row.site_id)
      .where('path_lower', '=', row.path.toLowerCase())
      .where('type', '=', 'file')
      .executeTakeFirst()
    if (!file?.blob_key) return undefined
    await db
      .updateTable('webhook_notifications')
      .set({ file_id: file.id, file_blob_key: file.blob_key, file_size: file.size, file_sha256: file.sha256 })
      .where('id', '=', row.id)
      .where('file_blob_key', 'is', null)
      .execute()
    n = { file_id: file.id, file_blob_key: file.blob_key, file_size: file.size, file_sha256: file.sha256 }
  }
  const blobKey = n.file_blob_key!
  // Just read from the file, or kept from an earlier attempt: no other look.
  const sha256 = n.file_sha256 ?? (fresh ? null : await versionSha256(db, row.id, blobKey))
  const expires = Math.floor((now + FILE_LINK_MS) / 1000)
  const token = signDownloadToken(await links.secret(row.site_id), {
    s: row.site_id,
    f: Number(n.file_id),
    b: blobKey,
    u: null,
    k: null,
    i: 'webhook',
    e: expires,
    w: row.id,
  })
  const name = row.path.slice(row.path.lastIndexOf('/') + 1)
  return {
    file_size: Number(n.file_size),
    file_sha256: sha256,
    file_version_id: versionIdOf(blobKey),
    file_download_url: `${links.baseUrl()}/api/rest/v1/downloads/${token}/${encodeURIComponent(name)}`,
    file_download_expires_at: new Date(expires * 1000).toISOString(),
  }
}

/**
 * The SHA-256 of a version the notification names, once the checksum job has written it to the
 * file still on those bytes; kept in the notification then, so that a later attempt still has it
 * after the file was replaced. Null while unknown (or the file moved on before it was known).
 */
async function versionSha256(db: Kysely<Database>, id: number, blobKey: string): Promise<string | null> {
  const file = await db
    .selectFrom('files')
    .select('sha256')
    .where('blob_key', '=', blobKey)
    .where('sha256', 'is not', null)
    .limit(1)
    .executeTakeFirst()
  if (!file?.sha256) return null
  await db
    .updateTable('webhook_notifications')
    .set({ file_sha256: file.sha256 })
    .where('id', '=', id)
    .execute()
  return file.sha256
}
