import mime from 'mime-types'
import { formatDateTime } from '../../api/datetime.js'
import type { AccessView } from './file-access.js'
import type { FileRow } from './file-repository.js'

/**
 * The File resource (Files.com fields, plus Wharf's int64 `id`). Folders have type `directory`,
 * size 0 and no checksums. `download_uri` is present only where a download was asked for.
 */
export interface FileJson {
  id: number
  path: string
  display_name: string
  type: 'file' | 'directory'
  size: number
  created_at: string | null
  mtime: string | null
  provided_mtime: string | null
  crc32: string | null
  md5: string | null
  sha1: null
  sha256: null
  mime_type: string | null
  region: string
  permissions: string
  subfolders_locked: boolean
  is_locked: boolean
  download_uri?: string
  priority_color: null
  preview_id: null
  preview: null
  custom_metadata: Record<string, string>
  created_by_id: number | null
  created_by_api_key_id: number | null
  last_modified_by_id: number | null
  last_modified_by_api_key_id: number | null
}

export function mimeTypeOf(name: string): string {
  return mime.lookup(name) || 'application/octet-stream'
}

export function toFileJson(row: FileRow, access: AccessView, downloadUri?: string): FileJson {
  const isFile = row.type === 'file'
  return {
    id: row.id,
    path: row.path,
    display_name: row.name,
    type: row.type,
    size: row.size,
    created_at: formatDateTime(row.created_at),
    mtime: formatDateTime(row.mtime),
    provided_mtime: formatDateTime(row.provided_mtime),
    crc32: isFile ? row.crc32 : null,
    md5: isFile ? row.md5 : null,
    sha1: null,
    sha256: null,
    mime_type: isFile ? mimeTypeOf(row.name) : null,
    region: 'local',
    permissions: access.permissionString(row.path),
    subfolders_locked: false,
    is_locked: false,
    ...(downloadUri !== undefined ? { download_uri: downloadUri } : {}),
    priority_color: null,
    preview_id: null,
    preview: null,
    custom_metadata: JSON.parse(row.custom_metadata) as Record<string, string>,
    created_by_id: row.created_by_id,
    created_by_api_key_id: row.created_by_api_key_id,
    last_modified_by_id: row.last_modified_by_id,
    last_modified_by_api_key_id: row.last_modified_by_api_key_id,
  }
}
