// The latency part of `npm run bench:webhooks`: small uploads through Wharf's API, one after
// another, each timed from its committed end (the action=end response) to the listener receiving
// its notification. See bench/webhooks.js and docs/performance.md, "Running the benchmarks".
import crypto from 'node:crypto'
import { json } from './harness.js'

const clock = () => performance.timeOrigin + performance.now()

/** A JSON request to Wharf's API with the run's key. */
export async function api(w, method, rel, body) {
  const res = await fetch(`${w.api}${rel}`, {
    method,
    headers: { ...w.headers, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return json(res, `${method} ${rel}`)
}

const enc = (p) => p.split('/').map(encodeURIComponent).join('/')

/** A small upload (put, PUT the bytes, end); when action=end was sent and when its response arrived. */
export async function upload(w, p, bytes) {
  const first = await api(w, 'POST', `/files/${enc(p)}`, { action: 'put' })
  const put = await fetch(first.upload_uri, { method: 'PUT', body: bytes })
  await json(put, `PUT ${p}`)
  const sent = clock()
  const res = await fetch(`${w.api}/files/${enc(p)}`, {
    method: 'POST',
    headers: { ...w.headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ action: 'end', ref: first.ref }),
  })
  const ended = clock()
  await json(res, `end ${p}`)
  return { sent, ended }
}

/** The p-th percentile of sorted numbers (the nearest rank below). */
export const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]

/** Sequential uploads into a fresh folder, each waited for at the listener: upload → receipt. */
export async function latency(w, listener, uploads, warmup) {
  const folder = `bench-latency-${crypto.randomBytes(3).toString('hex')}`
  await api(w, 'POST', `/folders/${folder}`, {})
  await listener.reset({ track: true })
  const bytes = crypto.randomBytes(1024)
  const ms = []
  const fromSent = []
  for (let i = 0; i < warmup + uploads; i++) {
    const p = `${folder}/file-${i}.txt`
    const { sent, ended } = await upload(w, p, bytes)
    const received = await listener.receipt(p, 30_000)
    if (i < warmup) continue
    ms.push(received - ended)
    fromSent.push(received - sent)
  }
  const r = await listener.report()
  if (r.count !== warmup + uploads) throw new Error(`latency: the listener got ${r.count} requests`)
  ms.sort((a, b) => a - b)
  fromSent.sort((a, b) => a - b)
  return {
    p50: pct(ms, 50),
    p99: pct(ms, 99),
    min: ms[0],
    max: ms[ms.length - 1],
    sentP50: pct(fromSent, 50),
    sentP99: pct(fromSent, 99),
  }
}
