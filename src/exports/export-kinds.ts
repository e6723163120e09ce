import type { ExportKind } from '../db/schema.js'
import type { ExportKindSpec } from './export-kind.js'
import { HISTORY_EXPORT } from './history-export.js'
import { WEBHOOK_LOG_EXPORT } from './webhook-log-export.js'

/** Every kind of export, by the name stored in `exports.kind`. */
export const EXPORT_KINDS: Record<ExportKind, ExportKindSpec> = {
  webhook_log: WEBHOOK_LOG_EXPORT,
  history: HISTORY_EXPORT,
}
