import crypto from 'node:crypto'

/** The fields of a webhook payload (api-spec.md, Events), in the order they are sent. */
export interface WebhookPayload {
  accountname: string
  username: string
  operation: string
  protocol: string
  path: string
  sourcepath: string
  attempt: number
  /** Fields beside the spec's (a file-aware endpoint's file fields), after them. */
  extra?: Record<string, string | number | null> | undefined
}

export interface SignedWebhook {
  headers: Record<string, string>
  body: string
}

export interface SigningKeys {
  verificationToken: string
  /** `whsec_` + base64 key (Standard Webhooks). */
  signingSecret: string
}

/** `X-Service-Signature`: md5 of the verification token followed by the raw body, 32 hex. */
export function serviceSignature(token: string, body: string): string {
  // One-shot: no Hash object per request (the bytes hashed are the same as token, then body).
  return crypto.hash('md5', token + body, 'hex')
}

/** HMAC keys by signing secret, decoded once (a site has one secret at a time). */
const hmacKeys = new Map<string, crypto.KeyObject>()

function hmacKey(secret: string): crypto.KeyObject {
  let key = hmacKeys.get(secret)
  if (key === undefined) {
    if (hmacKeys.size >= 256) hmacKeys.clear()
    key = crypto.createSecretKey(
      Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'),
    )
    hmacKeys.set(secret, key)
  }
  return key
}

/** `webhook-signature` of Standard Webhooks: HMAC-SHA256 over `id.timestamp.body`. */
export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const mac = crypto
    .createHmac('sha256', hmacKey(secret))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64')
  return `v1,${mac}`
}

/**
 * The request of one attempt: compact JSON with exactly the spec's fields, and both signatures.
 * The body changes with `attempt`, so each attempt is signed anew; `webhook-id` stays the same,
 * and so does `Webhook-Sequence` when the notification has one.
 */
export function signWebhook(
  payload: WebhookPayload,
  messageId: string,
  keys: SigningKeys,
  now: number,
  /** Its number among the deliveries of its path to this endpoint (webhook-ordering.ts), if any. */
  sequence: number | null = null,
): SignedWebhook {
  const body = JSON.stringify({
    accountname: payload.accountname,
    username: payload.username,
    operation: payload.operation,
    protocol: payload.protocol,
    path: payload.path,
    sourcepath: payload.sourcepath,
    attempt: payload.attempt,
    ...payload.extra,
  })
  const timestamp = Math.floor(now / 1000)
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': 'Wharf-Webhook',
    'X-Service-Signature': serviceSignature(keys.verificationToken, body),
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(keys.signingSecret, messageId, timestamp, body),
  }
  if (sequence !== null) headers[SEQUENCE_HEADER] = String(sequence)
  return { body, headers }
}

/** The header of a delivery's number among its path's deliveries to one endpoint (not signed). */
export const SEQUENCE_HEADER = 'Webhook-Sequence'
