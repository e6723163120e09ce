/**
 * The folder behavior types the Folder settings panel has forms for, and how each form field
 * becomes a part of the behavior's `value` and back. A setting the panel does not know (a newer
 * server's, or a type it has no form for) is kept and edited as JSON.
 */

export interface Behavior {
  id: number
  path: string
  behavior: string
  name: string | null
  description: string | null
  value: Record<string, unknown>
  recursive: boolean
  disable_parent_folder_behavior: boolean
}

/**
 * How a setting is edited: `list` comma-separated, `lines` one entry a line, `pairs` "Name: text"
 * lines (an object), `secret` write-only (left empty on an edit: the stored one stays).
 */
export type Kind = 'text' | 'number' | 'bool' | 'list' | 'lines' | 'select' | 'pairs' | 'secret'

export interface Setting {
  key: string
  label: string
  kind: Kind
  options?: readonly string[]
  hint?: string
}

export interface TypeForm {
  label: string
  settings: readonly Setting[]
}

export const TYPE_FORMS: Record<string, TypeForm> = {
  limit_file_extensions: {
    label: 'Allowed or refused file extensions',
    settings: [
      { key: 'extensions', label: 'Extensions', kind: 'list', hint: 'Comma-separated, e.g. csv, pdf' },
      { key: 'mode', label: 'Mode', kind: 'select', options: ['allow', 'deny'] },
    ],
  },
  limit_file_regex: {
    label: 'File name pattern',
    settings: [{ key: 'regex', label: 'Regular expression', kind: 'text', hint: 'File names must match it' }],
  },
  limit_filename_length: {
    label: 'File name length',
    settings: [{ key: 'max_length', label: 'Maximum length', kind: 'number', hint: '1 to 255 characters' }],
  },
  webhook: {
    label: 'Webhook',
    settings: [
      { key: 'urls', label: 'URLs', kind: 'lines', hint: 'One a line' },
      { key: 'method', label: 'Method', kind: 'select', options: ['POST', 'GET'] },
      { key: 'triggers', label: 'Triggers', kind: 'list', hint: 'Comma-separated; none means all' },
      {
        key: 'triggering_filenames',
        label: 'Only file names matching',
        kind: 'lines',
        hint: 'Globs, one a line',
      },
      {
        key: 'exclude_filenames',
        label: 'Except file names matching',
        kind: 'lines',
        hint: 'Globs, one a line',
      },
      { key: 'encoding', label: 'Encoding', kind: 'select', options: ['JSON', 'XML', 'RAW'] },
      {
        key: 'headers',
        label: 'Headers',
        kind: 'pairs',
        hint: '"Name: value", one a line; a name with no value keeps its stored value',
      },
      { key: 'body', label: 'Body fields', kind: 'pairs', hint: '"name: text", one a line' },
      {
        key: 'verification_token',
        label: 'Verification token',
        kind: 'secret',
        hint: 'Never shown again; leave empty to keep the stored one',
      },
    ],
  },
  file_expiration: {
    label: 'File expiration',
    settings: [
      { key: 'days_to_retain', label: 'Days to keep files', kind: 'number' },
      { key: 'delete_empty_folders', label: 'Delete folders left empty', kind: 'bool' },
    ],
  },
  append_timestamp: {
    label: 'Append a timestamp to uploaded file names',
    settings: [
      {
        key: 'format',
        label: 'Format',
        kind: 'text',
        hint: 'Tokens YYYY MM DD hh mm ss Z, e.g. -YYYY-MM-DDThh:mm:ssZ',
      },
      { key: 'time_zone', label: 'Time zone', kind: 'text', hint: 'e.g. Europe/Paris' },
    ],
  },
  override_upload_filename: {
    label: 'Rename uploaded files',
    settings: [
      {
        key: 'filename_override_pattern',
        label: 'File name pattern',
        kind: 'text',
        hint: 'e.g. {filename}-{YYYY}{MM}{DD}{extension}',
      },
      { key: 'time_zone', label: 'Time zone', kind: 'text', hint: 'e.g. Europe/Paris' },
    ],
  },
  lock_subfolders: {
    label: 'Lock subfolders',
    settings: [{ key: 'level', label: 'Level', kind: 'select', options: ['children', 'children_recursive'] }],
  },
  create_user_folders: {
    label: 'Create a folder for each user',
    settings: [
      {
        key: 'permission',
        label: 'Permission',
        kind: 'select',
        options: ['full', 'readonly', 'writeonly', 'list', 'history', 'admin'],
      },
      { key: 'new_folder_name', label: 'Folder named after', kind: 'select', options: ['username', 'name'] },
      { key: 'subfolders', label: 'Subfolders', kind: 'lines', hint: 'One a line' },
      { key: 'existing_users', label: 'For existing users too', kind: 'bool' },
      { key: 'group_id', label: 'Only members of group (id)', kind: 'number', hint: 'Empty: every user' },
    ],
  },
}

export const TYPE_NAMES = Object.keys(TYPE_FORMS)

export function typeLabel(type: string): string {
  return TYPE_FORMS[type]?.label ?? type
}

/** What a form field holds: text for every kind but `bool`. */
export type Draft = Record<string, string | boolean>

/** A stored value as the form's fields, and the settings the form does not know (as JSON, or ''). */
export function toDraft(type: string, value: Record<string, unknown>): { draft: Draft; other: string } {
  const settings = TYPE_FORMS[type]?.settings ?? []
  const draft: Draft = {}
  const rest: Record<string, unknown> = { ...value }
  for (const s of settings) {
    const v = value[s.key]
    delete rest[s.key]
    if (s.kind === 'bool') draft[s.key] = v === true
    else if (v === undefined || v === null) draft[s.key] = ''
    else if (s.kind === 'list' && Array.isArray(v)) draft[s.key] = v.join(', ')
    else if (s.kind === 'lines' && Array.isArray(v)) draft[s.key] = v.join('\n')
    else if (s.kind === 'pairs' && typeof v === 'object' && !Array.isArray(v))
      draft[s.key] = Object.entries(v as Record<string, unknown>)
        .map(([k, x]) => (x === null ? `${k}:` : `${k}: ${String(x)}`))
        .join('\n')
    else if (typeof v === 'string' || typeof v === 'number') draft[s.key] = String(v)
    else rest[s.key] = v // a shape the form cannot show: kept as JSON
  }
  return { draft, other: Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '' }
}

/** A form field's text read back as the setting's value; undefined: left out. */
function settingValue(s: Setting, v: string | boolean | undefined, editing: boolean): unknown {
  if (s.kind === 'bool') return v === true
  const text = typeof v === 'string' ? v : ''
  if (s.kind === 'secret') return text === '' ? (editing ? null : undefined) : text
  if (text.trim() === '') return undefined
  if (s.kind === 'number') return /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text.trim()
  if (s.kind === 'list')
    return text
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '')
  if (s.kind === 'lines')
    return text
      .split('\n')
      .map((x) => x.trim())
      .filter((x) => x !== '')
  if (s.kind === 'pairs') {
    const out: Record<string, string | null> = {}
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      const at = line.indexOf(':')
      const name = (at < 0 ? line : line.slice(0, at)).trim()
      const val = at < 0 ? '' : line.slice(at + 1).trim()
      // "Name:" alone on an edit keeps a stored header value (the server never shows it).
      out[name] = val === '' && editing ? null : val
    }
    return out
  }
  return s.kind === 'text' ? text.trim() : text
}

/**
 * The value the form describes: its fields over the JSON of the other settings. Throws a
 * SyntaxError when that JSON is not an object.
 */
export function fromDraft(
  type: string,
  draft: Draft,
  other: string,
  editing: boolean,
): Record<string, unknown> {
  const extra: unknown = other.trim() === '' ? {} : JSON.parse(other)
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra))
    throw new SyntaxError('must be a JSON object')
  const value: Record<string, unknown> = { ...(extra as Record<string, unknown>) }
  for (const s of TYPE_FORMS[type]?.settings ?? []) {
    const v = settingValue(s, draft[s.key], editing)
    if (v !== undefined) value[s.key] = v
  }
  return value
}

/** A value in a line, for the list: each setting with its value (hidden secrets said so). */
export function summary(b: Behavior): string {
  return Object.entries(b.value)
    .map(([k, v]) => {
      if (b.behavior === 'webhook' && k === 'verification_token') return null
      if (b.behavior === 'webhook' && k === 'headers' && v && typeof v === 'object')
        return `headers: ${Object.keys(v).join(', ') || 'none'}`
      return `${k.replace(/_/g, ' ')}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v)}`
    })
    .filter((x) => x !== null)
    .join(' · ')
}
