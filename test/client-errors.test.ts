import net from 'node:net'
import { describe, expect, it } from 'vitest'
import { type TestServer, useServer } from './helpers/server.js'

const BASE_FIELDS = ['error', 'http-code', 'instance', 'title', 'type']

interface RawResponse {
  status: number
  headers: Record<string, string>
  body: any
}

/** Sends bytes on a fresh loopback connection and reads until the server closes it. */
function rawRequest(s: TestServer, request: string): Promise<RawResponse> {
  const { port } = new URL(s.url)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(request))
    socket.on('data', (c) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [head = '', body = ''] = text.split('\r\n\r\n', 2)
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
      }
      resolve({
        status: Number(statusLine.split(' ')[1]),
        headers,
        body: body ? JSON.parse(body) : undefined,
      })
    })
  })
}

// Node's parser refuses these before Fastify sees them; the answer must still be Wharf's own.
describe('requests the HTTP parser refuses', () => {
  const s = useServer('sqlite')

  function expectWharfError(r: RawResponse, status: number): void {
    expect(r.status).toBe(status)
    expect(r.headers['connection']).toBe('close')
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    expect(Object.keys(r.body).sort()).toEqual(BASE_FIELDS)
    expect(r.body['http-code']).toBe(status)
    expect(r.body.type).toBe('bad-request')
    expect(r.body.title).toBe('Bad Request')
    expect(r.body.instance).toMatch(/^[0-9a-f-]{36}$/)
  }

  it('answers headers over 16 KiB with 431 in the error body', async () => {
    const r = await rawRequest(
      s,
      `GET /api/rest/v1/api_key HTTP/1.1\r\nHost: a\r\nX-ServiceAPI-Key: ${s.adminKey}\r\n` +
        `X-Padding: ${'x'.repeat(17 * 1024)}\r\n\r\n`,
    )
    expectWharfError(r, 431)
    expect(r.body.error).toMatch(/exceed the server's limit of 16384 bytes/)
  })

  it('counts an overlong URL within the same limit: 431, not 414', async () => {
    const r = await rawRequest(
      s,
      `GET /api/rest/v1/files/${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: a\r\n\r\n`,
    )
    expectWharfError(r, 431)
  })

  it('answers bytes that are not HTTP with 400 in the error body', async () => {
    const r = await rawRequest(s, 'HELLO THERE\r\n\r\n')
    expectWharfError(r, 400)
  })

  it('still serves headers just under the limit', async () => {
    const r = await fetch(`${s.api}/api_key`, {
      headers: { 'X-ServiceAPI-Key': s.adminKey, 'X-Padding': 'x'.repeat(15 * 1024) },
    })
    expect(r.status).toBe(200)
  })
})
