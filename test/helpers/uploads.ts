import crypto from 'node:crypto'
import { expect } from 'vitest'
import { type CallResult, call, type TestServer } from './server.js'

/** `/files/<path>` the way the Files.com SDKs write it: the whole path URL-encoded. */
export const filesUrl = (path: string) => `/files/${encodeURIComponent(path)}`

export const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex')

/** Deterministic bytes of a given length, different for each seed. */
export function bytes(length: number, seed = 1): Buffer {
  const out = Buffer.alloc(length)
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff
  return out
}

export async function putPart(uri: string, body: Buffer): Promise<Response> {
  return fetch(uri, { method: 'PUT', body })
}

export interface UploadResult {
  /** The response of `action=end`. */
  end: CallResult
  ref: string
}

/**
 * The whole upload flow over raw HTTP: open, one `action=put` per part, PUT each part (in the
 * given order, all at once), end. Every step but `end` must succeed.
 */
export async function uploadFile(
  s: TestServer,
  path: string,
  parts: Buffer[],
  o: { key?: string; order?: number[]; open?: Record<string, unknown>; end?: Record<string, unknown> } = {},
): Promise<UploadResult> {
  const key = o.key ?? s.adminKey
  const first = await call(s, 'POST', filesUrl(path), { key, body: { action: 'put', ...(o.open ?? {}) } })
  expect(first.status, first.text).toBe(201)
  const ref = first.body.ref as string
  const uris: string[] = []
  for (let n = 1; n <= parts.length; n++) {
    const r = await call(s, 'POST', filesUrl(path), { key, body: { action: 'put', part: n, ref } })
    expect(r.status, r.text).toBe(200)
    uris.push(r.body.upload_uri)
  }
  const order = o.order ?? parts.map((_, i) => i)
  const sent = await Promise.all(order.map((i) => putPart(uris[i]!, parts[i]!)))
  for (const r of sent) expect(r.status).toBe(200)
  const end = await call(s, 'POST', filesUrl(first.body.path), {
    key,
    body: { action: 'end', ref, ...(o.end ?? {}) },
  })
  return { end, ref }
}

/** Uploads and expects success: returns the File. */
export async function uploaded(s: TestServer, path: string, content: Buffer | string, key?: string) {
  const buf = typeof content === 'string' ? Buffer.from(content) : content
  const parts: Buffer[] = []
  const size = s.container.config.files.partSize
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size))
  const { end } = await uploadFile(s, path, parts, key ? { key } : {})
  expect(end.status, end.text).toBe(201)
  return end.body
}
