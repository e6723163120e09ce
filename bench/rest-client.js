// The REST API as a benchmark's client uses it: requests on one keep-alive agent, JSON answers,
// and the Files.com multi-part upload flow (open, PUT each part to its signed URL, end).
import fs from 'node:fs'
import http from 'node:http'

export const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** One request; resolves with the response, its body unread. `body` may be a stream. */
export function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => resolve(res))
    req.once('error', reject)
    if (body && typeof body.pipe === 'function') body.pipe(req)
    else req.end(body)
  })
}

/** A response's JSON (null when empty); an error status throws with the body. */
export async function readJson(res, what) {
  let text = ''
  for await (const c of res) text += c
  if (res.statusCode >= 300) throw new Error(`${what}: HTTP ${res.statusCode} ${text}`)
  return text === '' ? null : JSON.parse(text)
}

/**
 * A call to the API of a Wharf from startWharf, with its admin key unless `anonymous` (a share
 * link's visitor), and any `headers` more.
 */
export async function apiJson(w, method, rel, body, { anonymous = false, headers = {} } = {}) {
  const res = await request(`${w.api}${rel}`, {
    method,
    headers: { ...(anonymous ? {} : w.headers), ...headers, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  })
  return readJson(res, `${method} ${rel}`)
}

/** Uploads a file with the multi-part flow, `parallel` parts at a time; resolves to the file's JSON. */
export async function uploadFile(w, file, name, parallel = 4) {
  const rel = `/files/${encodeURIComponent(name)}`
  const size = (await fs.promises.stat(file)).size
  const first = await apiJson(w, 'POST', rel, { action: 'put' })
  const parts = Math.max(1, Math.ceil(size / first.partsize))
  let next = 1
  async function worker() {
    while (next <= parts) {
      const n = next++
      const part = await apiJson(w, 'POST', rel, { action: 'put', part: n, ref: first.ref })
      const start = (n - 1) * first.partsize
      const end = Math.min(size, start + first.partsize) - 1
      const res = await request(part.upload_uri, {
        method: 'PUT',
        headers: { 'Content-Length': String(end - start + 1) },
        body: size === 0 ? '' : fs.createReadStream(file, { start, end, highWaterMark: 1024 * 1024 }),
      })
      await readJson(res, `PUT part ${n}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, parts) }, worker))
  return apiJson(w, 'POST', rel, { action: 'end', ref: first.ref })
}
