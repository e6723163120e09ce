import { Type } from '@sinclair/typebox'
import { HISTORY_EXPORT, UNSUPPORTED_HISTORY_FIELDS } from '../../exports/history-export.js'
import { exportRoutes } from '../export-routes.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { Nullable, UserIdParam } from '../schemas.js'
import { Commas, ExportTime, exportCommon, exportTail, INTEGER_LIST } from './action-notification-exports.js'

const QueryText = (description: string) =>
  Type.Optional(Nullable(Type.String({ maxLength: 50_000, description })))
const nullableText = Nullable(Type.String())
const nullableInt = Nullable(Type.Integer())

export const HistoryExportSchema = Type.Object(
  {
    id: Type.Integer(),
    history_version: Type.String(),
    ...exportCommon,
    query_action: nullableText,
    query_interface: nullableText,
    query_user_id: nullableText,
    query_path: nullableText,
    query_folder: nullableText,
    query_src: nullableText,
    query_destination: nullableText,
    query_ip: nullableText,
    query_username: nullableText,
    query_failure_type: nullableText,
    ...Object.fromEntries(UNSUPPORTED_HISTORY_FIELDS.map((f) => [f, nullableText])),
    ...exportTail,
  },
  { $id: 'HistoryExport', title: 'HistoryExport' },
)

export const HistoryExportResultSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Action id' }),
    created_at: Type.Integer({ description: 'When the action happened: Unix epoch seconds' }),
    created_at_iso: Type.String({ format: 'date-time' }),
    user_id: nullableInt,
    file_id: Nullable(Type.Integer({ description: 'Id of the file or folder acted on, if any' })),
    parent_id: Nullable(Type.Integer({ description: 'Always null: Wharf does not record it' })),
    path: Type.String(),
    folder: Type.String(),
    src: nullableText,
    destination: nullableText,
    ip: nullableText,
    username: nullableText,
    user_is_from_parent_site: Type.Boolean({ description: 'Always false: Wharf has no parent sites' }),
    action: Type.String(),
    failure_type: nullableText,
    interface: nullableText,
    target_id: Nullable(Type.Integer({ description: 'Id of the user, API key … acted on' })),
    target_name: nullableText,
    target_permission: nullableText,
    target_recursive: Nullable(Type.Boolean()),
    target_expires_at: nullableInt,
    target_expires_at_iso: nullableText,
    target_permission_set: nullableText,
    target_platform: nullableText,
    target_username: nullableText,
    target_user_id: nullableInt,
  },
  { $id: 'HistoryExportResult', title: 'HistoryExportResult' },
)

const CreateBody = Type.Object(
  {
    user_id: Type.Optional(UserIdParam),
    start_at: ExportTime('Actions at or after this time'),
    end_at: ExportTime('Actions before this time'),
    query_action: QueryText(`Action type; ${Commas}`),
    query_interface: QueryText(`Interface; ${Commas}`),
    query_user_id: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 50_000,
          pattern: INTEGER_LIST,
          description: `Acting user id (integers); ${Commas}`,
        }),
      ),
    ),
    query_path: QueryText(`Exact path; ${Commas}`),
    query_folder: QueryText(`Folder: the folder and everything inside it; ${Commas}`),
    query_src: QueryText(`Exact source path of a move or copy; ${Commas}`),
    query_destination: QueryText(`Exact destination path of a move or copy; ${Commas}`),
    query_ip: QueryText(`Client IP address; ${Commas}`),
    query_username: QueryText(`Acting username (any case); ${Commas}`),
    query_failure_type: QueryText(`Failure type of a failed login; ${Commas}`),
  },
  // query_file_id, query_parent_id and query_target_*: Wharf's history does not record what they
  // search, so they are unknown parameters here (400), and left out of the document.
  { additionalProperties: false, title: 'HistoryExportCreate' },
)

/** History exports: every stored Action (not only the last 24 hours), as CSV and JSON results. */
export function historyExportRoutes(c: HttpContext): Routes {
  return exportRoutes(c, {
    spec: HISTORY_EXPORT,
    collection: 'history_exports',
    xml: 'history-export',
    schema: HistoryExportSchema,
    createBody: CreateBody,
    resultSchema: HistoryExportResultSchema,
    resultsId: { name: 'history_export_id', description: 'Id of the history export' },
    summaries: {
      create: 'Export the action history: starts building it in the background',
      show: 'Show a history export (poll until status is ready)',
      results: 'Records of a ready history export, oldest first (forward-only cursor)',
    },
  })
}
