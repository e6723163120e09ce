import http from 'node:http'
import net from 'node:net'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { basic } from './helpers/dav.js'
import { beginUpload, bytes, download, endUpload, partUrl, target } from './helpers/files.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  dialects,
  makeUser,
  type TestServer,
  useServer,
} from './helpers/server.js'

/** Short limits, so that a slow client is judged within a second and a steady one outlasts them. */
const LIMITS = {
  HTTP_HEADERS_TIMEOUT_MS: '400',
  HTTP_IDLE_TIMEOUT_MS: '600',
  HTTP_KEEP_ALIVE_TIMEOUT_MS: '600',
  HTTP_MIN_BODY_BYTES_PER_SECOND: '1000',
  HTTP_BODY_RATE_WINDOW_MS: '300',
}
const TICK_MS = 50
/** A slow client gives up after this many bytes: by then (10 s) it should long have been cut off. */
const MAX_TICKS = 200

interface Trickle {
  /** The server closed the connection before the client ran out of patience. */
  closedByServer: boolean
  /** What the server sent back, if anything. */
  answer: string
}

/**
 * A raw client on loopback: sends `head`, then one byte of `drip` every TICK_MS, until the server
 * closes the connection (or MAX_TICKS bytes have gone).
 */
function trickle(s: TestServer, head: string, drip = 'a'): Promise<Trickle> {
  const port = Number(new URL(s.url).port)
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    let answer = ''
    let ticks = 0
    let timer: NodeJS.Timeout | undefined
    const finish = (closedByServer: boolean) => {
      clearInterval(timer)
      socket.destroy()
      resolve({ closedByServer, answer })
    }
    socket.on('data', (d) => {
      answer += d.toString('latin1')
    })
    socket.on('error', () => {})
    socket.on('close', () => finish(ticks < MAX_TICKS))
    socket.on('connect', () => {
      socket.write(head)
      timer = setInterval(() => {
        if (++ticks >= MAX_TICKS) return finish(false)
        if (!socket.destroyed && socket.writable) socket.write(drip)
      }, TICK_MS)
    })
  })
}

describe.each(dialects)('slow clients (%s)', (dialect) => {
  /** The server's warnings, as logged. */
  const warnings: string[] = []
  const tooSlow = () => warnings.filter((w) => w.includes('request body too slow')).length
  const s = useServer(dialect, LIMITS, {
    logger: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }),
  })

  it('closes a connection whose headers arrive a byte at a time, with 408', async () => {
    const r = await trickle(s, 'GET /api/rest/v1/api_key HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')
    expect(r.closedByServer).toBe(true)
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('closes an upload part whose body arrives a byte at a time, with 408', async () => {
    const t = target(s)
    const first = await beginUpload(t, 'slow/part.bin')
    const uri = new URL((await partUrl(t, 'slow/part.bin', first.ref, 1)).upload_uri)
    const r = await trickle(
      s,
      `PUT ${uri.pathname}${uri.search} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n`,
    )
    expect(r.closedByServer).toBe(true)
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('closes a JSON request whose body arrives a byte at a time', async () => {
    const body = JSON.stringify({ username: 'someone', password: 'x'.repeat(400) })
    const r = await trickle(
      s,
      `POST /api/rest/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      ' ',
    )
    expect(r.closedByServer).toBe(true)
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('closes a WebDAV PUT whose body arrives a byte at a time, though it is read with for await', async () => {
    const before = tooSlow()
    const r = await trickle(
      s,
      `PUT /dav/slow-dav.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(ADMIN_USERNAME, ADMIN_PASSWORD)}\r\nContent-Length: 1000\r\n\r\n`,
    )
    expect(r.closedByServer).toBe(true)
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(tooSlow()).toBe(before + 1)
  })

  it('does not time the body of a refused WebDAV PUT after its answer, and closes its connection', async () => {
    const u = await makeUser(s, { username: 'refused' })
    const before = tooSlow()
    const r = await trickle(
      s,
      `PUT /dav/nowhere.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic('refused', u.password)}\r\nContent-Length: 1000\r\n\r\n`,
    )
    expect(r.closedByServer).toBe(true)
    expect(r.answer).toMatch(/^HTTP\/1\.1 403 /)
    expect(r.answer).toMatch(/\r\nconnection: close\r\n/i)
    // Several rate windows later, nothing was said of a body nobody was reading any more.
    await new Promise((resolve) => setTimeout(resolve, 4 * Number(LIMITS.HTTP_BODY_RATE_WINDOW_MS)))
    expect(tooSlow()).toBe(before)
  })

  it('keeps a steady upload that lasts longer than every limit', async () => {
    const t = target(s)
    const path = 'slow/steady.bin'
    const first = await beginUpload(t, path)
    const uri = new URL((await partUrl(t, path, first.ref, 1)).upload_uri)
    // 40 chunks of 2 KiB, one every TICK_MS: about 2 s in all, 40 KiB/s.
    const data = bytes(40 * 2048, 7)
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: uri.port,
          method: 'PUT',
          path: `${uri.pathname}${uri.search}`,
          headers: { 'Content-Length': String(data.length) },
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        },
      )
      req.on('error', reject)
      let sent = 0
      const timer = setInterval(() => {
        req.write(data.subarray(sent, sent + 2048))
        sent += 2048
        if (sent >= data.length) {
          clearInterval(timer)
          req.end()
        }
      }, TICK_MS)
    })
    expect(status).toBe(200)
    const end = await endUpload(t, path, first.ref)
    expect(end.status, end.text).toBe(201)
    expect((await download(t, path)).equals(data)).toBe(true)
  })
})
