import { MAX_PATH_LENGTH } from '../api/paths.js'

type Schema = Record<string, unknown>

/**
 * Rules that a field's schema states, so that the Swagger document says them, while a service
 * enforces them with errors of its own: 422 naming the field (with every other bad field of the
 * record), bad-request/invalid-path, part-number-too-large … and only after authorization. Such a
 * field names its rule with `x-check`; validation then runs the schema as the rule gives it here
 * (the stated rule left to the service, the request's old length cap kept), so the error a client
 * gets is the service's, whatever the schema says. The document is never looser than the server.
 */
const RULES = {
  // normalizePath / normalizeNewPath: invalid-path, trailing whitespace, path-too-long (> 5000).
  path: (s: Schema) => ({ ...omit(s, 'pattern'), maxLength: 6000 }),
  'new-path': (s: Schema) => ({ ...omit(s, 'pattern'), maxLength: 6000 }),
  // user-model.ts: 422 on the field.
  username: (s: Schema) => omit(s, 'pattern'),
  password: (s: Schema) => omit(s, 'minLength'),
  email: (s: Schema) => omit(s, 'pattern'),
  // permission-service.ts, api-key-service.ts: 422 on the field.
  permission: (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 64 }),
  'permission-set': (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 64 }),
  recursive: (s: Schema) => omit(s, 'enum'),
  // bundle-model.ts: 422 on the field.
  'bundle-permissions': (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 64 }),
  'bundle-code': (s: Schema) => ({ ...omit(s, 'pattern'), maxLength: 255 }),
  'bundle-max-uses': (s: Schema) => omit(s, 'minimum'),
  // upload-rules.ts: part-number-too-large, invalid-upload-offset.
  part: (s: Schema) => omit(s, 'maximum'),
  restart: (s: Schema) => omit(s, 'enum'),
  // allowed-ips.ts: 422 on allowed_ips (each line an address or a CIDR range).
  'allowed-ips': (s: Schema) => omit(s, 'pattern'),
  // webhook-settings.ts: 422 on url (length included) and on triggers.
  url: (s: Schema) => omit(omit(s, 'pattern'), 'maxLength'),
  trigger: (s: Schema) => omit(s, 'enum'),
  // behavior-service.ts: 422 on behavior, naming the types available.
  'behavior-type': (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 64 }),
  // behavior-service.ts: JSON text as documented, or the same as a JSON object (422 on value).
  'behavior-value': (s: Schema) => ({ ...s, type: ['object', 'string'] }),
  // behavior-service.ts (the webhook test's method, encoding and action): 422 on the field.
  'webhook-choice': (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 64 }),
  // password-rules.ts (the site's password rules, a user's validity): 422 on the field.
  range: (s: Schema) => omit(omit(s, 'minimum'), 'maximum'),
  // pagination.ts: directions in any case; boolean filters also as 1 or 0.
  sort: (s: Schema) => ({ ...omit(s, 'enum'), maxLength: 5000 }),
  flag: (s: Schema) => ({ ...s, type: ['boolean', 'string'], maxLength: 5000 }),
  // Free text (control-characters.ts): validation runs the pattern itself, and the error handler
  // answers its refusal with bad-request/request-params-contain-invalid-character.
  text: (s: Schema) => s,
  'text-lines': (s: Schema) => s,
} satisfies Record<string, (s: Schema) => Schema>

export type FieldRule = keyof typeof RULES

/**
 * Fields of which a request takes at most one (`x-exclusive`, the group's name or names), and, when
 * `required`, exactly one (`x-exclusive-required`): Swagger 2.0 has no oneOf, so the document
 * says it with these extensions (and in the description); the service enforces it.
 */
export const exclusive = (group: string | string[], required = false) => ({
  'x-exclusive': group,
  ...(required ? { 'x-exclusive-required': true } : {}),
})

/** Schema options naming the service rule that enforces what the schema states. */
export const checked = (rule: FieldRule) => ({ 'x-check': rule })

function omit(s: Schema, key: string): Schema {
  const { [key]: _dropped, ...rest } = s
  return rest
}

/** The schema validation runs: each `x-check` field as its rule has it (the same object if none). */
export function enforced<T>(node: T): T {
  if (Array.isArray(node)) {
    const out = node.map(enforced)
    return (out.every((v, i) => v === node[i]) ? node : out) as T
  }
  if (node === null || typeof node !== 'object') return node
  let changed = false
  const out: Schema = {}
  for (const [k, v] of Object.entries(node as Schema)) {
    out[k] = enforced(v)
    if (out[k] !== v) changed = true
  }
  const rule = out['x-check']
  if (typeof rule === 'string' && rule in RULES) return RULES[rule as FieldRule](out) as T
  return (changed ? out : node) as T
}

// The path rules of normalizePath and normalizeNewPath as patterns, for the Swagger document:
// slashes around the path are ignored; segments are not empty, `.` or `..`, and carry no control
// characters; a new path names at least one segment, none ending in whitespace.
const SEGMENT = '(?!\\.\\.?(?:/|$))[^/\\u0000-\\u001f\\u007f]+'
const NEW_SEGMENT = '(?!\\.\\.?(?:/|$))[^/\\u0000-\\u001f\\u007f]*[^/\\s\\u0000-\\u001f\\u007f]'
export const PATH_PATTERN = `^/*(?:${SEGMENT}(?:/${SEGMENT})*)?/*$`
export const NEW_PATH_PATTERN = `^/*${NEW_SEGMENT}(?:/${NEW_SEGMENT})*/*$`
export { MAX_PATH_LENGTH }
