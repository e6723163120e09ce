import crypto from 'node:crypto'
import net from 'node:net'
import { hasControlCharacter } from '../../api/control-characters.js'
import { formatDateTime } from '../../api/datetime.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import { type AddressGuard, WHY_REFUSED } from '../../webhooks/address-guard.js'
import { syncEndpoints } from '../../webhooks/endpoints/endpoint-rows.js'
import { isWebhookOperation, type WebhookSettings } from '../../webhooks/listener-settings.js'
import { WEBHOOK_OPERATIONS, type WebhookOperation } from '../../webhooks/webhook-operations.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { WebhookSettingsDefaults, WebhookSettingsRepository } from './webhook-settings-repository.js'

export { WEBHOOK_OPERATIONS, type WebhookOperation, type WebhookSettings }

export interface WebhookSettingsJson {
  url: string | null
  triggers: WebhookOperation[]
  enabled: boolean
  verification_token: string
  signing_secret: string
  updated_at: string
}

export interface UpdateWebhookSettingsInput {
  url?: string | null | undefined
  triggers?: string[] | undefined
  enabled?: boolean | undefined
  /** Read-only fields, accepted only as echoes of the current values. */
  [readOnly: string]: unknown
}

/** What PATCH shows but never changes: a client may send back what it read. */
const READ_ONLY_FIELDS = ['verification_token', 'signing_secret', 'updated_at']

export const MAX_URL_LENGTH = 2048

// A listener URL in a shape checkUrl always takes (for the Swagger document; a little narrower
// than checkUrl): http or https, a host name whose last label starts with a letter or a dotted
// IPv4 address, a port up to 65535, then no spaces or control characters. Empty clears the URL.
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'
const HOST = `(?:(?:[A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*|${OCTET}(?:\\.${OCTET}){3})`
const PORT = '(?::(?:[0-5]?[0-9]{1,4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?'
export const URL_PATTERN = `^(?:[Hh][Tt][Tt][Pp][Ss]?://${HOST}${PORT}(?:[/?#][^\\s\\u0000-\\u001f\\u007f]*)?)?$`

export function toWebhookSettingsJson(s: WebhookSettings): WebhookSettingsJson {
  return {
    url: s.url,
    triggers: s.triggers,
    enabled: s.enabled,
    verification_token: s.verificationToken,
    signing_secret: s.signingSecret,
    updated_at: formatDateTime(s.updatedAt)!,
  }
}

/** A new site's secrets: Standard Webhooks' `whsec_` and the base64 of a 24-byte HMAC key (no padding). */
function freshSecrets(): WebhookSettingsDefaults {
  return {
    verificationToken: crypto.randomBytes(16).toString('hex'),
    signingSecret: `whsec_${crypto.randomBytes(24).toString('base64')}`,
  }
}

/** GET and PATCH /webhook_settings: one listener per site, for site administrators. */
export class WebhookSettingsService {
  constructor(
    private readonly settings: WebhookSettingsRepository,
    /** The delivery guard's own rule, so that a URL is refused on saving exactly when it would be on sending. */
    private readonly guard: AddressGuard,
    private readonly now: () => number = Date.now,
  ) {}

  async get(p: Principal): Promise<WebhookSettingsJson> {
    requireSiteAdmin(p)
    return toWebhookSettingsJson(await this.load(p.siteId))
  }

  /** The site's settings, created with fresh secrets on first use (insert … on conflict do nothing, then read). */
  async load(siteId: number): Promise<WebhookSettings> {
    const found = await this.settings.find(siteId)
    if (found) return found
    await this.settings.insertDefaults(siteId, freshSecrets(), this.now())
    // Another request may have created the row first: its secrets win, and everyone reads them.
    return this.settings.get(siteId)
  }

  /**
   * Applies the given fields and saves them with an `update` Action in one transaction; the
   * dispatcher reads the row when it delivers, so the change applies to the next notification.
   * A PATCH that changes nothing records nothing.
   */
  async update(p: Principal, input: UpdateWebhookSettingsInput): Promise<WebhookSettingsJson> {
    requireSiteAdmin(p)
    const now = this.now()
    const saved = await this.settings.transaction(async (tx) => {
      const current = await lockedSettings(tx, p.siteId, now)
      refuseChangedReadOnly(input, toWebhookSettingsJson(current), READ_ONLY_FIELDS)
      const next = applyPatch(current, input, this.guard)
      const changed = changedFields(current, next)
      if (changed.length === 0) return current
      await tx.update(p.siteId, next, now)
      // The listener's endpoint follows its URL (a new URL starts with fresh health).
      if (next.url !== current.url) await syncEndpoints(tx.db, p.siteId, now)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'update',
          display: `${actorLabel(p)} changed the webhook settings (${changed.join(', ')})`,
          path: '',
          targets: [{ type: 'webhook_settings' }],
        },
        now,
      )
      return { ...next, updatedAt: now }
    })
    return toWebhookSettingsJson(saved)
  }
}

/**
 * The row, created if missing, and held until the transaction ends on PostgreSQL (SQLite runs one
 * write transaction at a time): two PATCHes cannot each check "enabled needs a url" against a
 * row the other is changing.
 */
async function lockedSettings(
  tx: WebhookSettingsRepository,
  siteId: number,
  now: number,
): Promise<WebhookSettings> {
  if (!(await tx.find(siteId))) await tx.insertDefaults(siteId, freshSecrets(), now)
  return tx.get(siteId, true)
}

/** The settings with the input applied, or a model-save error naming every bad field. */
function applyPatch(
  current: WebhookSettings,
  input: UpdateWebhookSettingsInput,
  guard: AddressGuard,
): WebhookSettings {
  const errors: ModelErrors = {}
  const next = { ...current }
  if (input.url !== undefined) next.url = checkUrl(input.url, errors, guard)
  if (input.triggers !== undefined) next.triggers = checkTriggers(input.triggers, errors)
  if (input.enabled !== undefined) next.enabled = input.enabled
  if (next.enabled && next.url === null && errors['url'] === undefined)
    addModelError(errors, 'url', "can't be blank when webhooks are enabled")
  if (Object.keys(errors).length) throw ApiError.modelSave(errors)
  return next
}

/**
 * An absolute http(s) URL with a host and no credentials, kept as given. A host that is an IP
 * address is judged by the delivery guard now; a host name is resolved, and its addresses vetted,
 * only at delivery (a name's addresses may change, and saving never waits on DNS).
 */
export function checkUrl(raw: string | null, errors: ModelErrors, guard: AddressGuard): string | null {
  if (raw === null || raw.trim() === '') return null
  const add = (m: string) => addModelError(errors, 'url', m)
  if (raw.length > MAX_URL_LENGTH) {
    add(`is too long (maximum is ${MAX_URL_LENGTH} characters)`)
    return null
  }
  // The URL parser would quietly drop tabs and line breaks and trim spaces; the stored URL must
  // be the one requested, so such characters are refused instead, as are the unprintable ones.
  if (/\s/.test(raw) || hasControlCharacter(raw)) {
    add('must not contain spaces or control characters')
    return null
  }
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  // `http:host` parses too; a listener URL spells out `//`.
  if (!url || !/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    add('must be an absolute URL such as https://example.com/hook')
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') add('must use http or https')
  else if (url.hostname === '') add('must name a host')
  if (url.username !== '' || url.password !== '') add('must not contain a user name or password')
  // The parser has already made `http://2130706433` or `http://0x7f.1` the address they reach.
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (net.isIP(address) !== 0 && !guard.allows(address)) {
    add(`must not point to ${address}: ${WHY_REFUSED}`)
  }
  return errors['url'] ? null : raw
}

/** Known operation names, exactly spelled; duplicates dropped, order kept. */
function checkTriggers(raw: string[], errors: ModelErrors): WebhookOperation[] {
  const unknown = raw.filter((t) => !isWebhookOperation(t))
  if (unknown.length) {
    addModelError(
      errors,
      'triggers',
      `has unknown operations: ${[...new Set(unknown)].map((t) => JSON.stringify(t)).join(', ')} (known: ${WEBHOOK_OPERATIONS.join(', ')})`,
    )
    return []
  }
  return [...new Set(raw)] as WebhookOperation[]
}

function changedFields(a: WebhookSettings, b: WebhookSettings): string[] {
  const changed: string[] = []
  if (a.url !== b.url) changed.push('url')
  if (JSON.stringify(a.triggers) !== JSON.stringify(b.triggers)) changed.push('triggers')
  if (a.enabled !== b.enabled) changed.push('enabled')
  return changed
}

/** Who made the change, for the Action's text: the user, or the site-wide key (no user). */
function actorLabel(p: Principal): string {
  if (p.user) return p.user.username
  if (p.apiKey) return `Site-wide API key (key ID #${p.apiKey.id})`
  return 'The operator'
}
