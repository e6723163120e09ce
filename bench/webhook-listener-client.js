// The parent's side of the benchmark listener (bench/webhook-listener.js): starts it as a child
// process that is always killed (bench/harness.js) and talks to it over IPC.
import { startChild } from './harness.js'

/** Requests per second between the first and the last request the listener received. */
export const listenerRate = (r) => ((r.count - 1) * 1000) / (r.last - r.first)

export async function startListener() {
  const proc = startChild(
    'webhook listener',
    ['bench/webhook-listener.js'],
    { PATH: process.env['PATH'] },
    { ipc: true },
  )
  /** Receipt times by payload path, while tracking (the latency measurement). */
  const receipts = new Map()
  const waiters = new Set()
  proc.child.on('message', (m) => {
    if (m.path !== undefined) receipts.set(m.path, m.at)
    for (const w of [...waiters]) {
      const v = w.pick(m)
      if (v !== undefined) w.settle(null, v)
    }
  })
  proc.exited.then(() => {
    for (const w of [...waiters]) w.settle(new Error(`the webhook listener exited:\n${proc.log()}`))
  })

  /** The first message for which `pick` returns a value, within `ms`. */
  const next = (pick, ms, what) =>
    new Promise((resolve, reject) => {
      const w = {
        pick,
        settle: (err, v) => {
          clearTimeout(timer)
          waiters.delete(w)
          if (err) reject(err)
          else resolve(v)
        },
      }
      const timer = setTimeout(() => w.settle(new Error(`listener: no ${what} within ${ms} ms`)), ms)
      waiters.add(w)
    })

  const port = await next((m) => m.port, 10_000, 'port')
  return {
    proc,
    url: `http://127.0.0.1:${port}/hooks/wharf`,
    next,
    /** Counting starts afresh; the listener sends { done } after `expect` requests. */
    async reset({ expect = 0, track = false } = {}) {
      receipts.clear()
      const ack = next((m) => m.reset, 5000, 'reset')
      proc.child.send({ cmd: 'reset', expect, track })
      await ack
    },
    /** { count, first, last, bytes } since the last reset. */
    async report() {
      const r = next((m) => (m.count !== undefined ? m : undefined), 5000, 'report')
      proc.child.send({ cmd: 'report' })
      return r
    },
    /** When the notification of path `p` arrived (it may have come before the caller asked). */
    receipt: (p, ms) =>
      receipts.has(p)
        ? receipts.get(p)
        : next((m) => (m.path === p ? m.at : undefined), ms, `request for ${p}`),
  }
}
