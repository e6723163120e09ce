import crypto from 'node:crypto'
import http from 'node:http'
import { expect, vi } from 'vitest'
import type { TestServer } from './server.js'

/**
 * Raw-HTTP file operations for the file tests: the Files.com upload dance (`action=put`, a part
 * URL per part, `PUT` of the bytes without credentials, `action=end`) spelled out step by step,
 * so a test controls the interleaving of several uploads, and downloads through `download_uri`.
 */

/** Where requests go: `api` is the `/api/rest/v1` base URL, `key` an API key. */
export interface Target {
  api: string
  key: string
  /** How the upload and download helpers put a path in a URL (default: `enc`). */
  encode?: (path: string) => string
}

const urlPath = (t: Target, path: string) => (t.encode ?? enc)(path)

export interface Reply {
  status: number
  headers: Headers
  text: string
  body: any
}

/** Each segment percent-encoded, slashes kept: the "raw" form of a path in a URL. */
export function enc(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/')
}

/** The whole path percent-encoded, slashes too (`a%2Fb.txt`): the form the SDKs send. */
export function encAll(path: string): string {
  return encodeURIComponent(path)
}

/** `/files/<path>` the way the Files.com SDKs write it, for `call` from server.ts. */
export const filesUrl = (path: string) => `/files/${encAll(path)}`

/** A test server as a Target (the site-wide key unless told), paths encoded as the SDKs do. */
export const target = (s: TestServer, key = s.adminKey): Target => ({ api: s.api, key, encode: encAll })

/** One authenticated JSON request; `p` is relative to /api/rest/v1 and already encoded. */
export async function req(t: Target, method: string, p: string, body?: unknown): Promise<Reply> {
  const headers: Record<string, string> = { 'X-FilesAPI-Key': t.key, Accept: 'application/json' }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await fetch(`${t.api}${p}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  const text = await res.text()
  let parsed: any
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text)
  return { status: res.status, headers: res.headers, text, body: parsed }
}

/**
 * A request whose path goes on the wire exactly as given: fetch would resolve `..` segments and
 * `%2E%2E` before sending, and the server must see them to refuse them.
 */
export function rawRequest(t: Target, method: string, p: string, body?: unknown): Promise<Reply> {
  const u = new URL(t.api)
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: `${u.pathname}${p}`,
        headers: {
          'X-FilesAPI-Key': t.key,
          Accept: 'application/json',
          ...(payload !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          const headers = new Headers()
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v)
          let body: any
          if ((res.headers['content-type'] ?? '').includes('json') && text !== '') body = JSON.parse(text)
          resolve({ status: res.statusCode ?? 0, headers, text, body })
        })
      },
    )
    r.on('error', reject)
    r.end(payload)
  })
}

export interface UploadPart {
  ref: string
  /** Where the upload will be published (another name than asked for with `with_rename`). */
  path: string
  upload_uri: string
  partsize: number
  part_number: number
  [k: string]: unknown
}

function ok(r: Reply, what: string): void {
  if (r.status < 200 || r.status > 299) throw new UploadStepError(what, r)
}

/** An upload step answered with an error; `reply` is what the server said. */
export class UploadStepError extends Error {
  constructor(
    readonly step: string,
    readonly reply: Reply,
  ) {
    super(`${step}: ${reply.status} ${reply.text.slice(0, 300)}`)
  }
}

/** `POST /files/{path}` with `action=put`: opens an upload, returns its first FileUploadPart. */
export async function beginUpload(t: Target, path: string, params: Record<string, unknown> = {}) {
  const r = await req(t, 'POST', `/files/${urlPath(t, path)}`, { action: 'put', ...params })
  ok(r, 'begin')
  return r.body as UploadPart
}

/** `POST /files/{path}` with `action=put`, `part`, `ref`: the signed URL for one part. */
export async function partUrl(t: Target, path: string, ref: string, part: number): Promise<UploadPart> {
  const r = await req(t, 'POST', `/files/${urlPath(t, path)}`, { action: 'put', ref, part })
  ok(r, `part ${part}`)
  return r.body as UploadPart
}

/** `PUT` of a part's bytes to its upload URL, with no credentials (the URL is signed). */
export async function putPart(uri: string, bytes: Buffer): Promise<Response> {
  return fetch(uri, { method: 'PUT', body: bytes })
}

/** `putPart`, its answer read. */
export async function putBytes(uri: string, bytes: Buffer): Promise<Reply> {
  const res = await putPart(uri, bytes)
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, body: undefined }
}

/** `POST /files/{path}` with `action=end`: publishes the upload, returns the File. */
export async function endUpload(
  t: Target,
  path: string,
  ref: string,
  params: Record<string, unknown> = {},
): Promise<Reply> {
  return req(t, 'POST', `/files/${urlPath(t, path)}`, { action: 'end', ref, ...params })
}

/** Splits bytes into parts of `partSize` (none for an empty file). */
export function split(bytes: Buffer, partSize: number): Buffer[] {
  const parts: Buffer[] = []
  for (let i = 0; i < bytes.length; i += partSize) parts.push(bytes.subarray(i, i + partSize))
  return parts
}

/** Stages every part of an upload; returns the ref, ready for `endUpload`. */
export async function stageUpload(
  t: Target,
  path: string,
  bytes: Buffer,
  params: Record<string, unknown> = {},
): Promise<string> {
  const first = await beginUpload(t, path, params)
  const parts = split(bytes, first.partsize)
  for (let i = 0; i < parts.length; i++) {
    const p = await partUrl(t, path, first.ref, i + 1)
    const put = await putBytes(p.upload_uri, parts[i]!)
    if (put.status < 200 || put.status > 299) throw new UploadStepError(`put ${i + 1}`, put)
  }
  return first.ref
}

/** A whole upload; resolves to the File, throws UploadStepError at the first refused step. */
export async function upload(
  t: Target,
  path: string,
  bytes: Buffer | string,
  params: Record<string, unknown> = {},
): Promise<any> {
  const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes
  const ref = await stageUpload(t, path, data, params)
  const end = await endUpload(t, path, ref)
  ok(end, 'end')
  return end.body
}

/**
 * The whole upload flow on a test server, paths encoded as the SDKs do: open, a part URL for
 * every part, PUT of all parts at once (in the given order), end. Every step but `end` must
 * succeed; the test judges `end`.
 */
export async function uploadFile(
  s: TestServer,
  path: string,
  parts: Buffer[],
  o: { key?: string; order?: number[]; open?: Record<string, unknown>; end?: Record<string, unknown> } = {},
): Promise<{ end: Reply; ref: string }> {
  const t = target(s, o.key)
  const { ref, path: opened } = await beginUpload(t, path, o.open)
  const uris: string[] = []
  for (let n = 1; n <= parts.length; n++) uris.push((await partUrl(t, path, ref, n)).upload_uri)
  const order = o.order ?? parts.map((_, i) => i)
  const sent = await Promise.all(order.map((i) => putPart(uris[i]!, parts[i]!)))
  for (const r of sent) expect(r.status).toBe(200)
  return { end: await endUpload(t, opened, ref, o.end), ref }
}

/** `uploadFile` in parts of the server's part size, expecting success: returns the File. */
export async function uploaded(s: TestServer, path: string, content: Buffer | string, key?: string) {
  const data = typeof content === 'string' ? Buffer.from(content) : content
  const parts = split(data, s.container.config.files.partSize)
  const { end } = await uploadFile(s, path, parts, key ? { key } : {})
  expect(end.status, end.text).toBe(201)
  return end.body
}

/**
 * `GET /files/{path}` once the file's md5 and CRC-32 are known: a background job computes them
 * after the upload commits, so `action=end` answers them as null.
 */
export async function withChecksums(t: Target, path: string): Promise<any> {
  return vi.waitFor(
    async () => {
      const r = await req(t, 'GET', `/files/${urlPath(t, path)}`)
      if (r.status !== 200 || r.body.md5 === null) throw new Error(`no checksums yet for ${path}: ${r.text}`)
      return r.body
    },
    { timeout: 20_000, interval: 20 },
  )
}

/** The reply of the first upload step the server refused (the test expects a refusal). */
export async function uploadRefusal(t: Target, path: string, bytes: Buffer | string): Promise<Reply> {
  try {
    await upload(t, path, bytes)
  } catch (err) {
    if (err instanceof UploadStepError) return err.reply
    throw err
  }
  throw new Error(`expected the upload of ${path} to be refused, but it succeeded`)
}

/** `GET /files/{path}` then the bytes behind its `download_uri` (no credentials). */
export async function download(t: Target, path: string): Promise<Buffer> {
  const r = await req(t, 'GET', `/files/${urlPath(t, path)}`)
  if (r.status !== 200)
    throw new Error(`GET /files/${path.slice(0, 80)}: ${r.status} ${r.text.slice(0, 300)}`)
  const res = await fetch(r.body.download_uri as string)
  if (res.status !== 200)
    throw new Error(`download ${path.slice(0, 80)}: ${res.status} ${(await res.text()).slice(0, 300)}`)
  return Buffer.from(await res.arrayBuffer())
}

export function md5(bytes: Buffer | string): string {
  return crypto.createHash('md5').update(bytes).digest('hex')
}

/** Deterministic bytes of a given length, different for each seed. */
export function bytes(length: number, seed = 1): Buffer {
  const out = Buffer.alloc(length)
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff
  return out
}
