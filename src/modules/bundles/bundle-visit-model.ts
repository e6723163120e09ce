import { hasControlCharacter } from '../../api/control-characters.js'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { BundlePathJson } from './bundle-repository.js'
import type {
  BundleActionRow,
  BundleDownloadRow,
  BundleRegistrationRow,
  RegistrationWithCode,
} from './bundle-visit-repository.js'

/** The recipients' side of a share link: what they see, and the records of what they did. */

export interface BundleRegistrationJson {
  code: string | null
  name: string | null
  company: string | null
  email: string | null
  ip: string | null
  inbox_code: null
  clickwrap_body: null
  form_field_set_id: null
  form_field_data: null
  bundle_code: string
  bundle_id: number
  bundle_recipient_id: null
  created_at: string
}

export interface BundleDownloadJson {
  bundle_registration: BundleRegistrationJson
  download_method: string
  path: string
  created_at: string
}

export interface BundleActionJson {
  action: string
  bundle_registration: BundleRegistrationJson
  created_at: string
  destination: string | null
  path: string
  source: string | null
  bundle_registration_id: number
  bundle_registration_name: string | null
  bundle_registration_email: string | null
  bundle_registration_ip: string | null
}

/**
 * The registration; `code` only for the visitor who just made it (Wharf keeps only its hash):
 * owners' lists show null.
 */
export function renderRegistration(
  r: RegistrationWithCode,
  code: string | null = null,
): BundleRegistrationJson {
  return {
    code,
    name: r.name,
    company: r.company,
    email: r.email,
    ip: r.ip,
    inbox_code: null,
    clickwrap_body: null,
    form_field_set_id: null,
    form_field_data: null,
    bundle_code: r.bundle_code,
    bundle_id: Number(r.bundle_id),
    bundle_recipient_id: null,
    created_at: formatDateTime(r.created_at)!,
  }
}

export function renderDownload(r: BundleDownloadRow): BundleDownloadJson {
  return {
    bundle_registration: renderRegistration(r.registration),
    download_method: r.download_method,
    path: r.path,
    created_at: formatDateTime(r.created_at)!,
  }
}

export function renderAction(r: BundleActionRow): BundleActionJson {
  return {
    action: r.action,
    bundle_registration: renderRegistration(r.registration),
    created_at: formatDateTime(r.created_at)!,
    destination: r.destination,
    path: r.path,
    source: r.source,
    bundle_registration_id: Number(r.bundle_registration_id),
    bundle_registration_name: r.registration.name,
    bundle_registration_email: r.registration.email,
    bundle_registration_ip: r.registration.ip,
  }
}

export const REGISTRATION_LIST: ListSpec = {
  name: 'bundle_registrations',
  idColumn: 'bundle_registrations.id',
  sort: {
    bundle_id: { column: 'bundle_registrations.bundle_id', type: 'integer' },
    created_at: { column: 'bundle_registrations.created_at', type: 'datetime' },
  },
  filter: {},
}

export const DOWNLOAD_LIST: ListSpec = {
  name: 'bundle_downloads',
  idColumn: 'bundle_downloads.id',
  sort: { created_at: { column: 'bundle_downloads.created_at', type: 'datetime' } },
  filter: { created_at: { column: 'bundle_downloads.created_at', type: 'datetime' } },
}

export const ACTION_LIST: ListSpec = {
  name: 'bundle_actions',
  idColumn: 'bundle_actions.id',
  sort: {
    created_at: { column: 'bundle_actions.created_at', type: 'datetime' },
    bundle_registration_id: { column: 'bundle_actions.bundle_registration_id', type: 'integer' },
  },
  filter: {
    created_at: { column: 'bundle_actions.created_at', type: 'datetime' },
    bundle_id: { column: 'bundle_actions.bundle_id', type: 'integer' },
    bundle_registration_id: { column: 'bundle_actions.bundle_registration_id', type: 'integer' },
  },
}

/** The refusal of every path a share does not cover, whatever the trick: nothing to probe. */
export const bundlePathNotFound = (path: string) =>
  ERRORS.bundlePathNotFound(`${path || 'This path'} is not in this share link`)

/**
 * A path as a visitor gives it, relative to the share: its first segment names one of the shared
 * paths (by its last segment), the rest lies inside it. Anything that is not plain segments
 * (`..`, `.`, empty segments, a leading slash, backslashes, control characters, `~`) names nothing
 * the share covers: 404 bundle-path-not-found, never a path outside.
 */
export function resolveSharePath(
  raw: string,
  shared: BundlePathJson[],
): { real: string; root: string } | null {
  if (raw === '') return null
  if (raw.startsWith('/') || raw.includes('\\') || hasControlCharacter(raw)) throw bundlePathNotFound('')
  const trimmed = raw.replace(/\/+$/, '')
  const segments = trimmed.split('/')
  if (segments.some((s) => s === '' || s === '.' || s === '..' || s.startsWith('~') || s.trim() !== s)) {
    throw bundlePathNotFound('')
  }
  const first = segments[0]!.toLowerCase()
  const root = shared.find((p) => nameOfPath(p.path).toLowerCase() === first)
  if (!root) throw bundlePathNotFound(trimmed)
  return { real: [root.path, ...segments.slice(1)].join('/'), root: root.path }
}

/** The share-relative spelling of a real path inside the shared `root`. */
export function relativePath(real: string, root: string): string {
  return nameOfPath(root) + real.slice(root.length)
}

function nameOfPath(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}

/**
 * A folder name made from what a visitor typed: slashes, backslashes and control characters
 * become `_`, leading dots and surrounding spaces go, at most 100 characters; '' if nothing is left.
 */
export function folderName(text: string): string {
  return [...text]
    .map((c) => (c === '/' || c === '\\' || hasControlCharacter(c) ? '_' : c))
    .join('')
    .trim()
    .replace(/^\.+/, '')
    .slice(0, 100)
    .trim()
}

/** Where one registration's uploads go inside the shared folder ('' for the folder itself). */
export function submissionFolder(
  bundle: {
    dont_separate_submissions_by_folder: number
    path_template: string | null
    path_template_time_zone: string | null
  },
  reg: BundleRegistrationRow,
  now: number,
): string {
  if (bundle.dont_separate_submissions_by_folder === 1) return ''
  if (bundle.path_template) {
    const segments = bundle.path_template
      .split('/')
      .map((s) => folderName(renderTemplate(s, reg, now, bundle.path_template_time_zone)))
      .filter((s) => s !== '' && s !== '.' && s !== '..')
    if (segments.length > 0) return segments.join('/')
  }
  return (
    folderName(reg.name ?? '') ||
    folderName(reg.email ?? '') ||
    folderName(reg.company ?? '') ||
    reg.code_start
  )
}

/**
 * `{{name}}`, `{{email}}`, `{{company}}`, `{{ip}}` become the registration's (empty when not
 * given); `%Y %m %d %H %M %S` the upload's date and time in `path_template_time_zone` (an IANA
 * name such as `Europe/Berlin`; UTC when absent or unknown); `%%` is `%`.
 */
export function renderTemplate(
  template: string,
  reg: Pick<BundleRegistrationRow, 'name' | 'email' | 'company' | 'ip'>,
  now: number,
  timeZone: string | null,
): string {
  const parts = dateParts(now, timeZone)
  return template
    .replace(
      /\{\{\s*(name|email|company|ip)\s*\}\}/g,
      (_m, k: 'name' | 'email' | 'company' | 'ip') => reg[k] ?? '',
    )
    .replace(/%([YmdHMS%])/g, (_m, d: string) => (d === '%' ? '%' : parts[d]!))
}

function dateParts(now: number, timeZone: string | null): Record<string, string> {
  let fmt: Intl.DateTimeFormat
  try {
    fmt = new Intl.DateTimeFormat('en-CA', {
      timeZone: timeZone || 'UTC',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    })
  } catch {
    return dateParts(now, 'UTC')
  }
  const p = Object.fromEntries(fmt.formatToParts(new Date(now)).map((x) => [x.type, x.value]))
  return { Y: p['year']!, m: p['month']!, d: p['day']!, H: p['hour']!, M: p['minute']!, S: p['second']! }
}
