import { Type } from '@sinclair/typebox'
import { DateTime, Nullable } from '../schemas.js'

/** Response schemas shared by the file, folder and file-action routes. */
export const FileSchema = Type.Object(
  {
    id: Type.Integer({
      description: 'File or folder id (a Wharf extension; DELETE /resource/{id} takes it)',
    }),
    path: Type.String({ description: 'Path, without leading or trailing slash' }),
    display_name: Type.String(),
    type: Type.String({ description: 'file or directory' }),
    size: Type.Integer({ description: 'Bytes (0 for folders)' }),
    created_at: DateTime(),
    mtime: DateTime('Last modified, by the server'),
    provided_mtime: DateTime('Last modified, as the uploading client said'),
    crc32: Nullable(
      Type.String({
        description: 'CRC-32, 8 hex characters; null for folders and until computed after the upload',
      }),
    ),
    md5: Nullable(
      Type.String({ description: '32 hex characters; null for folders and until computed after the upload' }),
    ),
    sha1: Nullable(Type.String({ description: 'Not computed: always null' })),
    sha256: Nullable(Type.String({ description: 'Not computed: always null' })),
    mime_type: Nullable(Type.String()),
    region: Type.String(),
    permissions: Type.String({ description: 'The caller’s permissions here: r, w, d, l' }),
    subfolders_locked: Type.Boolean(),
    is_locked: Type.Boolean(),
    download_uri: Type.Optional(Type.String({ description: 'Signed, expiring link to the bytes' })),
    priority_color: Nullable(Type.String()),
    preview_id: Nullable(Type.Integer()),
    preview: Nullable(Type.Object({})),
    custom_metadata: Type.Object({}, { additionalProperties: Type.String() }),
    created_by_id: Nullable(Type.Integer()),
    created_by_api_key_id: Nullable(Type.Integer()),
    last_modified_by_id: Nullable(Type.Integer()),
    last_modified_by_api_key_id: Nullable(Type.Integer()),
  },
  { $id: 'File', title: 'File' },
)

export const FileUploadPartSchema = Type.Object(
  {
    send: Type.Object({}, { additionalProperties: Type.String() }),
    action: Type.String(),
    ask_about_overwrites: Type.Boolean(),
    available_parts: Type.Integer(),
    expires: DateTime('When upload_uri stops working'),
    headers: Type.Object({}, { additionalProperties: Type.String() }),
    http_method: Type.String(),
    next_partsize: Type.Integer(),
    parallel_parts: Type.Boolean(),
    retry_parts: Type.Boolean(),
    parameters: Type.Object({}, { additionalProperties: Type.String() }),
    part_number: Type.Integer(),
    partsize: Type.Integer(),
    path: Type.String(),
    ref: Type.String(),
    upload_uri: Type.String(),
  },
  { $id: 'FileUploadPart', title: 'FileUploadPart' },
)

export const FileActionSchema = Type.Object(
  {
    status: Type.String({ description: 'completed: Wharf finishes copies and moves before answering' }),
    file_migration_id: Nullable(Type.Integer()),
  },
  { $id: 'FileAction', title: 'FileAction' },
)
