import { Type } from '@sinclair/typebox'
import { WEBHOOK_LOG_EXPORT } from '../../exports/webhook-log-export.js'
import { exportRoutes } from '../export-routes.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { DateTime, DateTimeText, Nullable, UserIdParam } from '../schemas.js'

/** The query fields and the links every export shows (both kinds). */
export const exportCommon = {
  start_at: DateTime('Start of the export range (inclusive)'),
  end_at: DateTime('End of the export range (exclusive)'),
  status: Type.String({ description: 'building, ready or failed' }),
}
export const exportTail = {
  results_url: Nullable(
    Type.String({ description: 'When ready: signed link (24 hours) to all results as CSV, no credentials' }),
  ),
  user_id: Nullable(Type.Integer({ description: 'The user the export acts for; null for a site-wide key' })),
  failure_reason: Nullable(Type.String({ description: 'Wharf extension: why the export failed' })),
  results_count: Nullable(
    Type.Integer({ description: 'Wharf extension: when ready, how many records the results hold' }),
  ),
}

/** Query fields of export bodies: null or '' asks for nothing. */
const QueryText = (description: string) =>
  Type.Optional(Nullable(Type.String({ maxLength: 50_000, description })))
export const ExportTime = (description: string) =>
  Type.Optional(Nullable(DateTimeText(`${description}; null for no limit`)))
export const Commas = 'several values may be given, separated by commas'
/** Comma-separated integers (integerValues in query-fields.ts); empty values are ignored. */
export const INTEGER_LIST = '^(?:\\s*(?:-?\\d{1,15})?\\s*)(?:,\\s*(?:-?\\d{1,15})?\\s*)*$'

export const ActionNotificationExportSchema = Type.Object(
  {
    id: Type.Integer(),
    export_version: Type.String(),
    ...exportCommon,
    query_message: Nullable(Type.String()),
    query_request_method: Nullable(Type.String()),
    query_request_url: Nullable(Type.String()),
    query_status: Nullable(Type.String()),
    query_path: Nullable(Type.String()),
    query_folder: Nullable(Type.String()),
    query_success: Nullable(Type.Boolean()),
    query_behavior_id: Nullable(Type.String({ description: 'Wharf extension: webhook behavior ids' })),
    ...exportTail,
  },
  { $id: 'ActionNotificationExport', title: 'ActionNotificationExport' },
)

export const ActionNotificationExportResultSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Id of the log record (what the retry endpoint takes)' }),
    created_at: Type.Integer({ description: 'When the request was sent: Unix epoch seconds' }),
    status: Type.Integer({ description: 'HTTP status, or a curl-style code for a network failure' }),
    message: Type.String(),
    success: Type.Boolean(),
    request_headers: Type.String({ description: 'JSON of the headers sent' }),
    request_method: Type.String(),
    request_url: Type.String(),
    path: Type.String(),
    folder: Type.String(),
    attempt: Type.Integer({ description: 'Wharf extension: attempt number' }),
    operation: Type.String({ description: 'Wharf extension: Upload, Download, …' }),
    response_size: Type.Integer({ description: 'Wharf extension: bytes of the answer' }),
    response_body: Type.String({ description: 'Wharf extension: first 64 KiB of the answer' }),
    request_body: Type.String({
      description: 'Wharf extension: the payload sent (for GET, the query string added to the URL)',
    }),
    behavior_id: Nullable(
      Type.Integer({
        description:
          "Wharf extension: the webhook behavior the request was for; null for the site's listener",
      }),
    ),
    delivered_by_id: Nullable(
      Type.Integer({
        description:
          'Wharf extension, not in the CSV: for a failed record whose notification a later attempt has since delivered (as of this request), the id of that log record; the retry endpoint refuses such a record. Otherwise null',
      }),
    ),
    delivered_by_attempt: Nullable(
      Type.Integer({ description: 'Wharf extension, not in the CSV: the attempt number of delivered_by_id' }),
    ),
  },
  { $id: 'ActionNotificationExportResult', title: 'ActionNotificationExportResult' },
)

const CreateBody = Type.Object(
  {
    user_id: Type.Optional(UserIdParam),
    start_at: ExportTime('Records sent at or after this time'),
    end_at: ExportTime('Records sent before this time'),
    query_message: QueryText(`Records whose message contains this (any case); ${Commas}`),
    query_request_method: QueryText(`HTTP method; ${Commas}`),
    query_request_url: QueryText(`Listener URL; ${Commas}`),
    query_status: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 50_000,
          pattern: INTEGER_LIST,
          description: `HTTP status or curl-style code (integers); ${Commas}`,
        }),
      ),
    ),
    query_path: QueryText(`Exact path of the file; ${Commas}`),
    query_folder: QueryText(`Folder: the folder and everything inside it; ${Commas}`),
    query_success: Type.Optional(
      Nullable(Type.Boolean({ description: 'Only successful, or only failed requests' })),
    ),
    query_behavior_id: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 50_000,
          pattern: INTEGER_LIST,
          description: `Wharf extension: requests of these webhook behaviors (ids); ${Commas}`,
        }),
      ),
    ),
  },
  { additionalProperties: false, title: 'ActionNotificationExportCreate' },
)

/** Webhook-log exports: create, show, and the JSON results (the CSV is under /export_files). */
export function actionNotificationExportRoutes(c: HttpContext): Routes {
  return exportRoutes(c, {
    spec: WEBHOOK_LOG_EXPORT,
    collection: 'action_notification_exports',
    xml: 'action-notification-export',
    schema: ActionNotificationExportSchema,
    createBody: CreateBody,
    resultSchema: ActionNotificationExportResultSchema,
    resultsId: { name: 'action_notification_export_id', description: 'Id of the export' },
    summaries: {
      create: 'Export the webhook log: starts building it in the background',
      show: 'Show a webhook-log export (poll until status is ready)',
      results: 'Records of a ready webhook-log export, oldest first (forward-only cursor)',
    },
  })
}
