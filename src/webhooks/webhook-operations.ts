/**
 * The operations a webhook can be triggered by, in the order settings show them. A module of its
 * own, with no imports, so the web interface builds its trigger checkboxes from this same list.
 */
export const WEBHOOK_OPERATIONS = [
  'Upload',
  'Download',
  'Delete',
  'Create Folder',
  'Rename',
  'Move',
  'Copy',
] as const
export type WebhookOperation = (typeof WEBHOOK_OPERATIONS)[number]
