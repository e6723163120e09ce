import { createRequire } from 'node:module'
import type { XMLBuilder } from 'fast-xml-parser'
import type { Kysely } from 'kysely'
import type { Minimatch } from 'minimatch'
import { applyingAt, foldersAbove } from '../api/behavior-matching.js'
import { nameOf } from '../api/paths.js'
import type { Database } from '../db/schema.js'
import {
  SEQUENCE_HEADER,
  serviceSignature,
  standardSignature,
  type WebhookPayload,
} from './webhook-signature.js'

/**
 * Webhook behaviors: a folder's own listeners, beside the site's. Which behaviors an Action
 * notifies (inheritance as for every behavior, then triggers and file-name globs), and the request
 * one of them is sent as (method, encoding, headers, extra body fields, signatures).
 */

export type WebhookEncoding = 'JSON' | 'XML' | 'RAW'

/** A webhook behavior's value, ready to match and to send with. */
export interface BehaviorWebhook {
  id: number
  urls: string[]
  method: 'POST' | 'GET'
  triggers: string[]
  triggering: Minimatch[]
  exclude: Minimatch[]
  encoding: WebhookEncoding
  headers: Record<string, string>
  body: Record<string, string>
  verificationToken: string | null
}

/** What a behavior's notification is sent with: the stored behavior, or a test's own settings. */
/** A behavior's test request, checked: where it goes, the operation it names, how it is sent. */
export interface WebhookTestRequest {
  url: string
  operation: string
  sending: BehaviorSending
}

export type BehaviorSending = Pick<
  BehaviorWebhook,
  'urls' | 'method' | 'encoding' | 'headers' | 'body' | 'verificationToken'
>

/** One notification to write: the behavior and the one URL of it that it goes to. */
export interface BehaviorTarget {
  behaviorId: number
  url: string
}

/** Parsed values by their JSON text (a value changed is another text): no invalidation needed. */
const parsed = new Map<string, Omit<BehaviorWebhook, 'id'>>()
const MAX_PARSED = 1024

const load = createRequire(import.meta.url)
let minimatch: typeof Minimatch | undefined
/** minimatch is loaded by the first webhook behavior read: a site without any never holds it. */
const globOf = (g: string) => {
  minimatch ??= (load('minimatch') as typeof import('minimatch')).Minimatch
  return new minimatch(g, { nocase: true, dot: true, nocomment: true, nonegate: true })
}

/** The webhook behavior of a stored value (checked when it was saved: behavior-types.ts). */
export function behaviorWebhookOf(id: number, valueText: string): BehaviorWebhook {
  let v = parsed.get(valueText)
  if (v === undefined) {
    const raw = JSON.parse(valueText) as Record<string, unknown>
    const list = (k: string) => (Array.isArray(raw[k]) ? (raw[k] as string[]) : [])
    v = {
      urls: list('urls'),
      method: raw['method'] === 'GET' ? 'GET' : 'POST',
      triggers: list('triggers'),
      triggering: list('triggering_filenames').map(globOf),
      exclude: list('exclude_filenames').map(globOf),
      encoding: raw['encoding'] === 'XML' ? 'XML' : raw['encoding'] === 'RAW' ? 'RAW' : 'JSON',
      headers: (raw['headers'] ?? {}) as Record<string, string>,
      body: (raw['body'] ?? {}) as Record<string, string>,
      verificationToken: typeof raw['verification_token'] === 'string' ? raw['verification_token'] : null,
    }
    if (parsed.size >= MAX_PARSED) parsed.clear()
    parsed.set(valueText, v)
  }
  return { id, ...v }
}

/**
 * Whether a behavior wants an Action: its triggers name the operation or the Action's verb (none
 * means all), and the file's name (or, for a glob with a slash, its path) matches a triggering
 * glob (none means all) and no exclude glob.
 */
export function wants(b: BehaviorWebhook, verb: string, operation: string, path: string): boolean {
  if (b.triggers.length > 0 && !b.triggers.includes(operation) && !b.triggers.includes(verb)) return false
  const name = nameOf(path)
  const hit = (m: Minimatch) => m.match(m.pattern.includes('/') ? path : name)
  if (b.triggering.length > 0 && !b.triggering.some(hit)) return false
  return !b.exclude.some(hit)
}

/**
 * The behaviors' notifications of one Action: the webhook behaviors that apply in `folder` (one
 * indexed statement: the folder and those above it), each of its URLs once.
 */
export async function behaviorTargets(
  db: Kysely<Database>,
  siteId: number,
  folder: string,
  verb: string,
  operation: string,
  path: string,
  /** Rows already read for a folder (lower case), for a batch of Actions in few folders. */
  read?: Map<string, Promise<WebhookBehaviorRow[]>>,
): Promise<BehaviorTarget[]> {
  const key = folder.toLowerCase()
  let pending = read?.get(key)
  if (!pending) {
    pending = webhookBehaviorsAbove(db, siteId, key)
    read?.set(key, pending)
  }
  const rows = await pending
  if (rows.length === 0) return []
  const out: BehaviorTarget[] = []
  for (const row of applyingAt(rows, folder)) {
    const b = behaviorWebhookOf(row.id, row.value)
    if (!wants(b, verb, operation, path)) continue
    for (const url of b.urls) out.push({ behaviorId: row.id, url })
  }
  return out
}

type WebhookBehaviorRow = Awaited<ReturnType<typeof webhookBehaviorsAbove>>[number]

/** The statement of BehaviorRepository.onAndAbove, for the webhook type only. */
function webhookBehaviorsAbove(db: Kysely<Database>, siteId: number, folderLower: string) {
  return db
    .selectFrom('behaviors')
    .selectAll()
    .where('site_id', '=', siteId)
    .where('path_lower', 'in', foldersAbove(folderLower))
    .where('behavior', '=', 'webhook')
    .orderBy('id')
    .execute()
}

/** The webhook behaviors of some ids, in one statement; an id that is no webhook behavior is absent. */
export async function loadBehaviorWebhooks(
  db: Kysely<Database>,
  ids: readonly number[],
): Promise<Map<number, BehaviorWebhook>> {
  const out = new Map<number, BehaviorWebhook>()
  if (ids.length === 0) return out
  const rows = await db
    .selectFrom('behaviors')
    .select(['id', 'value'])
    .where('id', 'in', [...new Set(ids)])
    .where('behavior', '=', 'webhook')
    .execute()
  for (const r of rows) out.set(Number(r.id), behaviorWebhookOf(Number(r.id), r.value))
  return out
}

/** One request of a behavior, and its headers as the log shows them (custom values hidden). */
export interface BehaviorRequest {
  url: string
  method: 'POST' | 'GET'
  headers: Record<string, string>
  body: string | undefined
  loggedHeaders: Record<string, string>
  /** What the log records as the body: the body, or for GET the query string added. */
  loggedBody: string
}

/** A custom header's value as the log shows it: the values are secrets, like the API hides them. */
export const HIDDEN_HEADER = '[hidden]'

let xmlBuilder: XMLBuilder | undefined
/** The XML body's builder, loaded with the first behavior that sends XML. */
const xml = () => {
  xmlBuilder ??= new (load('fast-xml-parser') as typeof import('fast-xml-parser')).XMLBuilder({
    format: false,
    suppressEmptyNode: false,
  })
  return xmlBuilder
}

/** The fields sent: the spec's payload, then the behavior's own (which cannot replace one of those). */
function fieldsOf(payload: WebhookPayload, extra: Record<string, string>): Record<string, Field> {
  const { extra: fileFields, ...spec } = payload
  const out: Record<string, Field> = { ...spec, ...fileFields }
  for (const [k, v] of Object.entries(extra)) if (!(k in out)) out[k] = v
  return out
}

/** A field's value: null (a file-aware field not known) is JSON's null, and empty in XML or a form. */
type Field = string | number | null

const texts = (fields: Record<string, Field>) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v ?? '']))

function encode(fields: Record<string, Field>, encoding: WebhookEncoding): [string, string] {
  switch (encoding) {
    case 'XML':
      return [
        `<?xml version="1.0" encoding="UTF-8"?>${xml().build({ webhook: texts(fields) }) as string}`,
        'application/xml',
      ]
    case 'RAW':
      return [formOf(fields), 'application/x-www-form-urlencoded']
    default:
      return [JSON.stringify(fields), 'application/json']
  }
}

const formOf = (fields: Record<string, Field>) =>
  new URLSearchParams(
    Object.entries(fields).map(([k, v]): [string, string] => [k, String(v ?? '')]),
  ).toString()

/**
 * The request of one attempt to one URL of a behavior. POST sends the fields in the body in its
 * encoding; GET sends them in the query string (form-encoded, whatever the encoding) and no body.
 * Signatures cover what carries the fields (the body, or the query string added), with the
 * behavior's verification token: `X-Service-Signature` as the site's listener has it, and the
 * Standard Webhooks signature keyed by the token's bytes (secret `whsec_` + base64 of the token).
 * Without a token neither signature is sent.
 */
export function behaviorRequest(
  b: Pick<BehaviorWebhook, 'method' | 'encoding' | 'headers' | 'body' | 'verificationToken'>,
  url: string,
  payload: WebhookPayload,
  messageId: string,
  now: number,
  /** Its number among the deliveries of its path to this URL (webhook-ordering.ts), if any. */
  sequence: number | null = null,
): BehaviorRequest {
  const fields = fieldsOf(payload, b.body)
  let signed: string
  let body: string | undefined
  let target = url
  const own: Record<string, string> = { 'User-Agent': 'Wharf-Webhook' }
  if (b.method === 'GET') {
    signed = formOf(fields)
    target = `${url}${url.includes('?') ? '&' : '?'}${signed}`
    body = undefined
  } else {
    const [text, type] = encode(fields, b.encoding)
    signed = body = text
    own['Content-Type'] = type
  }
  const timestamp = Math.floor(now / 1000)
  own['webhook-id'] = messageId
  own['webhook-timestamp'] = String(timestamp)
  if (sequence !== null) own[SEQUENCE_HEADER] = String(sequence)
  if (b.verificationToken !== null) {
    own['X-Service-Signature'] = serviceSignature(b.verificationToken, signed)
    own['webhook-signature'] = standardSignature(
      behaviorSigningSecret(b.verificationToken),
      messageId,
      timestamp,
      signed,
    )
  }
  const headers: Record<string, string> = { ...b.headers, ...own }
  const loggedHeaders: Record<string, string> = {}
  for (const k of Object.keys(b.headers)) loggedHeaders[k] = HIDDEN_HEADER
  Object.assign(loggedHeaders, own)
  return { url: target, method: b.method, headers, body, loggedHeaders, loggedBody: signed }
}

/** The Standard Webhooks secret of a behavior: its verification token's bytes, as `whsec_` + base64. */
export function behaviorSigningSecret(token: string): string {
  return `whsec_${Buffer.from(token, 'utf8').toString('base64')}`
}
