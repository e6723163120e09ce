import { hasControlCharacter } from '../../api/control-characters.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { AddressGuard } from '../../webhooks/address-guard.js'
import { WEBHOOK_OPERATIONS } from '../../webhooks/webhook-operations.js'
import { checkUrl } from '../webhooks/webhook-settings.js'
import { checkRegex, MAX_NAME_LENGTH_LIMIT } from './name-rules.js'
import { overrideValue, timestampValue } from './upload-names.js'
import { lockValue, userFoldersValue } from './user-folders.js'

/**
 * The behavior types Wharf builds and the shape of each one's `value`. Every other
 * `folder_behavior_type` of the app catalog is refused when a behavior is created.
 */
export const BEHAVIOR_TYPES = [
  'webhook',
  'limit_file_extensions',
  'limit_file_regex',
  'limit_filename_length',
  'append_timestamp',
  'override_upload_filename',
  'lock_subfolders',
  'create_user_folders',
  'file_expiration',
] as const
export type BehaviorType = (typeof BEHAVIOR_TYPES)[number]

/** The types whose behaviors are created (all those Wharf builds). */
export const AVAILABLE_TYPES: readonly BehaviorType[] = [
  'webhook',
  'limit_file_extensions',
  'limit_file_regex',
  'limit_filename_length',
  'append_timestamp',
  'override_upload_filename',
  'lock_subfolders',
  'create_user_folders',
  'file_expiration',
]

export function isBehaviorType(s: string): s is BehaviorType {
  return (BEHAVIOR_TYPES as readonly string[]).includes(s)
}

/** What a webhook behavior's `triggers` may name: the listener's operations and the model's verbs. */
export const WEBHOOK_BEHAVIOR_TRIGGERS = [
  ...WEBHOOK_OPERATIONS,
  'create',
  'read',
  'update',
  'destroy',
  'move',
  'copy',
] as const

const MAX_URLS = 10
const MAX_GLOBS = 100
const MAX_GLOB_LENGTH = 255
const MAX_EXTENSIONS = 100
const MAX_EXTENSION_LENGTH = 32
const MAX_HEADERS = 50
const MAX_BODY_FIELDS = 50
const MAX_TEXT = 4096
/**
 * Headers a webhook behavior may not set: Wharf sets them itself (the body's type, the signatures,
 * its name) or the connection does (framing, host).
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'user-agent',
  'x-service-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'webhook-sequence',
])
/** The fields every notification has: a behavior's `body` adds others, never replaces these. */
const PAYLOAD_FIELDS = ['accountname', 'username', 'operation', 'protocol', 'path', 'sourcepath', 'attempt']
/** A body field's name: one that JSON, XML elements and forms all carry as it is. */
const BODY_FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/

/** A header's value as the API shows it: header values are secrets, written but never read back. */
const HIDDEN = null

type Value = Record<string, unknown>

/** Checks and normalises a type's value; problems go to `errors` under `value.<field>`. */
export function checkValue(
  type: BehaviorType,
  raw: Value,
  errors: ModelErrors,
  guard: AddressGuard,
  stored: Value | undefined,
): Value {
  const known = KNOWN_FIELDS[type]
  for (const k of Object.keys(raw)) {
    if (!known.includes(k))
      addModelError(errors, `value.${k}`, `is not a setting of ${type} (settings: ${known.join(', ')})`)
  }
  switch (type) {
    case 'limit_file_extensions':
      return extensionsValue(raw, errors)
    case 'limit_file_regex':
      return regexValue(raw, errors)
    case 'limit_filename_length':
      return lengthValue(raw, errors)
    case 'webhook':
      return webhookValue(raw, errors, guard, stored)
    case 'append_timestamp':
      return timestampValue(raw, errors)
    case 'override_upload_filename':
      return overrideValue(raw, errors)
    case 'lock_subfolders':
      return lockValue(raw, errors)
    case 'create_user_folders':
      return userFoldersValue(raw, errors)
    case 'file_expiration':
      return expirationValue(raw, errors)
  }
}

const KNOWN_FIELDS: Record<BehaviorType, string[]> = {
  limit_file_extensions: ['extensions', 'mode'],
  limit_file_regex: ['regex'],
  limit_filename_length: ['max_length'],
  append_timestamp: ['format', 'time_zone'],
  override_upload_filename: ['filename_override_pattern', 'time_zone'],
  lock_subfolders: ['level'],
  create_user_folders: ['permission', 'new_folder_name', 'subfolders', 'existing_users', 'group_id'],
  file_expiration: ['days_to_retain', 'delete_empty_folders'],
  webhook: [
    'urls',
    'method',
    'triggers',
    'triggering_filenames',
    'exclude_filenames',
    'encoding',
    'headers',
    'body',
    'verification_token',
  ],
}

function extensionsValue(raw: Value, errors: ModelErrors): Value {
  const mode = raw['mode'] ?? 'allow'
  if (mode !== 'allow' && mode !== 'deny') addModelError(errors, 'value.mode', 'must be allow or deny')
  const list = raw['extensions']
  const out: string[] = []
  if (!Array.isArray(list) || list.length === 0) {
    addModelError(
      errors,
      'value.extensions',
      'must be a list of one or more extensions, such as ["csv", "pdf"]',
    )
  } else if (list.length > MAX_EXTENSIONS) {
    addModelError(errors, 'value.extensions', `must have at most ${MAX_EXTENSIONS} entries`)
  } else {
    for (const e of list) {
      // A leading dot is accepted (".csv"); the comparison is without it and in lower case.
      const ext = typeof e === 'string' ? e.trim().replace(/^\./, '').toLowerCase() : ''
      if (
        ext === '' ||
        ext.length > MAX_EXTENSION_LENGTH ||
        /[/\\\s]/.test(ext) ||
        hasControlCharacter(ext)
      ) {
        addModelError(
          errors,
          'value.extensions',
          `has an invalid extension ${JSON.stringify(e)} (a name ending such as "csv", at most ${MAX_EXTENSION_LENGTH} characters)`,
        )
      } else if (!out.includes(ext)) out.push(ext)
    }
  }
  return { extensions: out, mode }
}

function regexValue(raw: Value, errors: ModelErrors): Value {
  const regex = raw['regex']
  if (typeof regex !== 'string' || regex === '') {
    addModelError(errors, 'value.regex', 'must be a regular expression that file names must match')
    return { regex: '' }
  }
  const problem = checkRegex(regex)
  if (problem) addModelError(errors, 'value.regex', problem)
  return { regex }
}

function lengthValue(raw: Value, errors: ModelErrors): Value {
  const n = raw['max_length']
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_NAME_LENGTH_LIMIT) {
    addModelError(errors, 'value.max_length', `must be a whole number from 1 to ${MAX_NAME_LENGTH_LIMIT}`)
  }
  return { max_length: n }
}

/** The longest retention a file_expiration takes: 100 years. */
export const MAX_DAYS_TO_RETAIN = 36_500

function expirationValue(raw: Value, errors: ModelErrors): Value {
  const days = raw['days_to_retain']
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_DAYS_TO_RETAIN) {
    addModelError(
      errors,
      'value.days_to_retain',
      `must be a whole number of days from 1 to ${MAX_DAYS_TO_RETAIN}: files stored longer ago are deleted`,
    )
  }
  const empty = raw['delete_empty_folders'] ?? false
  if (typeof empty !== 'boolean') addModelError(errors, 'value.delete_empty_folders', 'must be true or false')
  return { days_to_retain: days, delete_empty_folders: empty }
}

function stringList(
  raw: unknown,
  field: string,
  errors: ModelErrors,
  max: number,
  maxLength: number,
): string[] {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw) || raw.some((s) => typeof s !== 'string' || s === '' || s.length > maxLength)) {
    addModelError(
      errors,
      `value.${field}`,
      `must be a list of non-empty texts of at most ${maxLength} characters`,
    )
    return []
  }
  if (raw.length > max) addModelError(errors, `value.${field}`, `must have at most ${max} entries`)
  return [...new Set(raw as string[])]
}

/** Header and body fields: names to texts. A header given as null keeps the value already stored. */
function textMap(
  raw: unknown,
  field: string,
  errors: ModelErrors,
  max: number,
  keep: Value | undefined,
): Record<string, string> {
  if (raw === undefined || raw === null) return {}
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    addModelError(errors, `value.${field}`, 'must be an object of names and texts')
    return {}
  }
  const entries = Object.entries(raw as Value)
  if (entries.length > max) addModelError(errors, `value.${field}`, `must have at most ${max} entries`)
  const out: Record<string, string> = {}
  for (const [k, v] of entries) {
    const kept = v === null && keep ? keep[k] : undefined
    if (field === 'headers' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) {
      addModelError(errors, `value.${field}`, `has an invalid header name ${JSON.stringify(k)}`)
    } else if (field === 'headers' && RESERVED_HEADERS.has(k.toLowerCase())) {
      addModelError(errors, `value.${field}`, `cannot set ${k}: Wharf sets it itself`)
    } else if (field === 'body' && (!BODY_FIELD_NAME.test(k) || PAYLOAD_FIELDS.includes(k))) {
      addModelError(
        errors,
        `value.${field}`,
        `has an invalid field name ${JSON.stringify(k)} (letters, digits, _ . - starting with a letter or _, at most 64; not one of ${PAYLOAD_FIELDS.join(', ')})`,
      )
    } else if (typeof kept === 'string') {
      out[k] = kept
    } else if (typeof v !== 'string' || v.length > MAX_TEXT || hasControlCharacter(v)) {
      addModelError(
        errors,
        `value.${field}`,
        `has an invalid value for ${JSON.stringify(k)} (a line of text of at most ${MAX_TEXT} characters${field === 'headers' ? '; null keeps the stored one' : ''})`,
      )
    } else out[k] = v
  }
  return out
}

function webhookValue(
  raw: Value,
  errors: ModelErrors,
  guard: AddressGuard,
  stored: Value | undefined,
): Value {
  const urls = raw['urls']
  const outUrls: string[] = []
  if (!Array.isArray(urls) || urls.length === 0) {
    addModelError(errors, 'value.urls', 'must be a list of one or more http(s) URLs')
  } else if (urls.length > MAX_URLS) {
    addModelError(errors, 'value.urls', `must have at most ${MAX_URLS} entries`)
  } else {
    for (const u of urls) {
      const own: ModelErrors = {}
      const ok = typeof u === 'string' && u.trim() !== '' ? checkUrl(u, own, guard) : null
      if (ok === null) {
        const why = own['url']?.join(', ') ?? 'must be an absolute URL such as https://example.com/hook'
        addModelError(errors, 'value.urls', `has ${JSON.stringify(u)}, which ${why}`)
      } else if (!outUrls.includes(ok)) outUrls.push(ok)
    }
  }
  const method = raw['method'] ?? 'POST'
  if (method !== 'POST' && method !== 'GET') addModelError(errors, 'value.method', 'must be POST or GET')
  const encoding = raw['encoding'] ?? 'JSON'
  if (encoding !== 'JSON' && encoding !== 'XML' && encoding !== 'RAW') {
    addModelError(errors, 'value.encoding', 'must be JSON, XML or RAW')
  }
  const triggers = stringList(raw['triggers'], 'triggers', errors, 50, 64)
  const unknown = triggers.filter((t) => !(WEBHOOK_BEHAVIOR_TRIGGERS as readonly string[]).includes(t))
  if (unknown.length) {
    addModelError(
      errors,
      'value.triggers',
      `has unknown operations: ${unknown.map((t) => JSON.stringify(t)).join(', ')} (known: ${WEBHOOK_BEHAVIOR_TRIGGERS.join(', ')}; none means all)`,
    )
  }
  const storedHeaders = stored?.['headers'] as Value | undefined
  const token = raw['verification_token']
  let verificationToken: string | null = null
  if (token === null && typeof stored?.['verification_token'] === 'string') {
    verificationToken = stored['verification_token'] as string
  } else if (token !== undefined && token !== null && token !== '') {
    if (typeof token !== 'string' || token.length > 255 || /\s/.test(token) || hasControlCharacter(token)) {
      addModelError(
        errors,
        'value.verification_token',
        'must be a text of at most 255 characters without spaces',
      )
    } else verificationToken = token
  }
  return {
    urls: outUrls,
    method,
    triggers,
    triggering_filenames: stringList(
      raw['triggering_filenames'],
      'triggering_filenames',
      errors,
      MAX_GLOBS,
      MAX_GLOB_LENGTH,
    ),
    exclude_filenames: stringList(
      raw['exclude_filenames'],
      'exclude_filenames',
      errors,
      MAX_GLOBS,
      MAX_GLOB_LENGTH,
    ),
    encoding,
    headers: textMap(raw['headers'], 'headers', errors, MAX_HEADERS, storedHeaders),
    body: textMap(raw['body'], 'body', errors, MAX_BODY_FIELDS, undefined),
    verification_token: verificationToken,
  }
}

/** The value as the API shows it: a webhook's header values and token are never read back. */
export function shownValue(type: string, value: Value): Value {
  if (type !== 'webhook') return value
  const headers = (value['headers'] ?? {}) as Value
  return {
    ...value,
    headers: Object.fromEntries(Object.keys(headers).map((k) => [k, HIDDEN])),
    // Whether one is set is not shown either: the token is a secret like the header values.
    verification_token: HIDDEN,
  }
}
