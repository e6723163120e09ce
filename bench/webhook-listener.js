// The webhook listener of `npm run bench:webhooks`, in a process of its own: node:http on
// 127.0.0.1, answers every request 204 with no body, counts them and notes when the first and
// the last arrived (performance.timeOrigin + performance.now(), comparable across processes).
// Driven over IPC by bench/webhooks.js:
//   { cmd: 'reset', expect, track } → counting starts afresh; { first } is sent when the first
//     request arrives, { done } once `expect` have; with `track`, { path, url, at } for each
//     request (the path from its body, the URL it was sent to), for the latency measurement.
//   { cmd: 'report' } → { count, first, last, bytes }.
import http from 'node:http'

const now = () => performance.timeOrigin + performance.now()
let state = { count: 0, first: 0, last: 0, bytes: 0, expect: 0, track: false }

const server = http.createServer((req, res) => {
  const chunks = state.track ? [] : null
  req.on('data', (c) => {
    state.bytes += c.length
    chunks?.push(c)
  })
  req.on('end', () => {
    const at = now()
    res.writeHead(204)
    res.end()
    const s = state
    s.count++
    s.last = at
    if (s.count === 1) {
      s.first = at
      process.send({ first: at })
    }
    if (chunks) {
      let path = null
      try {
        path = JSON.parse(Buffer.concat(chunks).toString('utf8')).path ?? null
      } catch {}
      process.send({ path, url: req.url, at })
    }
    if (s.count === s.expect) process.send({ done: at })
  })
})
// Keep-alive connections stay open as long as the senders keep them.
server.keepAliveTimeout = 60_000

process.on('message', (m) => {
  if (m.cmd === 'reset') {
    state = { count: 0, first: 0, last: 0, bytes: 0, expect: m.expect ?? 0, track: m.track === true }
    process.send({ reset: true })
  } else if (m.cmd === 'report') {
    const { count, first, last, bytes } = state
    process.send({ count, first, last, bytes })
  }
})
process.on('disconnect', () => process.exit(0))
process.once('SIGTERM', () => process.exit(0))

server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
