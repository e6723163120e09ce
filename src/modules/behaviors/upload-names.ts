import { hasControlCharacter } from '../../api/control-characters.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'

/**
 * The behaviors that rewrite an uploaded file's name (`append_timestamp`,
 * `override_upload_filename`): their values, and the name they make of the one sent.
 */

type Value = Record<string, unknown>

export const DEFAULT_TIMESTAMP_FORMAT = '-YYYY-MM-DDThh:mm:ssZ'
const MAX_FORMAT = 64
const MAX_PATTERN = 255
/** Date tokens of a timestamp format, longest first. */
const DATE_TOKENS = ['YYYY', 'MM', 'DD', 'hh', 'mm', 'ss', 'Z'] as const
/** The placeholders of an override pattern. */
export const PATTERN_PLACEHOLDERS = [
  'filename',
  'extension',
  'name',
  'username',
  'YYYY',
  'MM',
  'DD',
  'hh',
  'mm',
  'ss',
] as const

/** An IANA time zone name (`Europe/Paris`), or a message saying why not. */
function checkTimeZone(raw: unknown, errors: ModelErrors): string {
  if (raw === undefined || raw === null || raw === '') return 'UTC'
  if (typeof raw === 'string') {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: raw })
      return raw
    } catch {}
  }
  addModelError(errors, 'value.time_zone', 'must be an IANA time zone name such as UTC or Europe/Paris')
  return 'UTC'
}

const unsafe = (s: string) => /[/\\]/.test(s) || hasControlCharacter(s)

export function timestampValue(raw: Value, errors: ModelErrors): Value {
  const format = raw['format'] ?? DEFAULT_TIMESTAMP_FORMAT
  if (typeof format !== 'string' || format === '' || format.length > MAX_FORMAT || unsafe(format)) {
    addModelError(
      errors,
      'value.format',
      `must be a text of 1 to ${MAX_FORMAT} characters without slashes, with the tokens ${DATE_TOKENS.join(', ')}`,
    )
  }
  return { format, time_zone: checkTimeZone(raw['time_zone'], errors) }
}

export function overrideValue(raw: Value, errors: ModelErrors): Value {
  const pattern = raw['filename_override_pattern']
  if (
    typeof pattern !== 'string' ||
    pattern.trim() === '' ||
    pattern.length > MAX_PATTERN ||
    unsafe(pattern)
  ) {
    addModelError(
      errors,
      'value.filename_override_pattern',
      `must be a name pattern of at most ${MAX_PATTERN} characters without slashes, such as {filename}-{YYYY}{MM}{DD}{extension}`,
    )
  } else {
    const unknown = [...pattern.matchAll(/\{([^{}]*)\}/g)]
      .map((m) => m[1]!)
      .filter((k) => !(PATTERN_PLACEHOLDERS as readonly string[]).includes(k))
    if (unknown.length) {
      addModelError(
        errors,
        'value.filename_override_pattern',
        `has unknown placeholders ${unknown.map((k) => `{${k}}`).join(', ')} (known: ${PATTERN_PLACEHOLDERS.map((k) => `{${k}}`).join(', ')})`,
      )
    }
  }
  return { filename_override_pattern: pattern, time_zone: checkTimeZone(raw['time_zone'], errors) }
}

/** Formatters by time zone: each is made once per process. */
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The date parts of `at` in `zone`, and its offset (`Z` for UTC, else `+hh:mm`). */
function dateParts(at: number, zone: string): Record<string, string> {
  let f = formatters.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    })
    if (formatters.size < 1000) formatters.set(zone, f)
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]))
  const offset = (parts['timeZoneName'] ?? 'GMT').replace('GMT', '')
  return {
    YYYY: (parts['year'] ?? '').padStart(4, '0'),
    MM: parts['month'] ?? '',
    DD: parts['day'] ?? '',
    hh: parts['hour'] ?? '',
    mm: parts['minute'] ?? '',
    ss: parts['second'] ?? '',
    Z: offset === '' || offset === '+00:00' ? 'Z' : offset,
  }
}

/** `report.csv` → [`report`, `.csv`]; `notes` and `.env` have no extension. */
function splitName(name: string): [string, string] {
  const dot = name.lastIndexOf('.')
  return dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, '']
}

/** One renaming behavior, as read from its row. */
export interface RenameRule {
  behavior: 'append_timestamp' | 'override_upload_filename'
  value: Value
}

/**
 * The name an upload named `name` is stored under: the nearest `override_upload_filename`
 * rewrites it, then the nearest `append_timestamp` inserts the time before its extension.
 */
export function renamed(name: string, rules: readonly RenameRule[], at: number, username: string): string {
  const override = rules.findLast((r) => r.behavior === 'override_upload_filename')
  const stamp = rules.findLast((r) => r.behavior === 'append_timestamp')
  let out = name
  if (override) {
    const v = override.value
    const d = dateParts(at, String(v['time_zone'] ?? 'UTC'))
    const [base, ext] = splitName(name)
    const values: Record<string, string> = { ...d, filename: base, extension: ext, name, username }
    out = String(v['filename_override_pattern']).replace(/\{([^{}]*)\}/g, (m, k: string) => values[k] ?? m)
  }
  if (stamp) {
    const v = stamp.value
    const d = dateParts(at, String(v['time_zone'] ?? 'UTC'))
    const format = String(v['format'] ?? DEFAULT_TIMESTAMP_FORMAT)
    let text = ''
    for (let i = 0; i < format.length; ) {
      const token = DATE_TOKENS.find((t) => format.startsWith(t, i))
      text += token ? d[token] : format[i]
      i += token ? token.length : 1
    }
    const [base, ext] = splitName(out)
    out = `${base}${text}${ext}`
  }
  return out
}
