/**
 * The permission sets an API key can have, with the words the web interface shows for each. A
 * module of its own, with no imports, so the web interface builds its choices from this same list.
 */
export const PERMISSION_SETS = [
  'none',
  'full',
  'desktop_app',
  'sync_app',
  'office_integration',
  'mobile_app',
] as const
export type PermissionSet = (typeof PERMISSION_SETS)[number]

/**
 * Every set in words, in the order the web interface offers them (most common first). The app sets
 * also reach share links on Files.com; Wharf has none yet, so the words say what they reach today.
 */
export const PERMISSION_SET_LABELS: Record<PermissionSet, string> = {
  full: 'Full: everything its user may do',
  desktop_app: 'Desktop app: files and folders only',
  sync_app: 'Sync app: files and folders only',
  mobile_app: 'Mobile app: files and folders only',
  office_integration: 'Office integration: files and folders only',
  none: 'None: can only look itself up',
}
