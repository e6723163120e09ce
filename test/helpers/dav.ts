import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import http from 'node:http'
import { expect } from 'vitest'
import type { TestListener } from './listener.js'
import { call, type TestServer } from './server.js'

export interface DavResult {
  status: number
  headers: Headers
  text: string
}

export const basic = (user: string, pass: string) =>
  `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`

/** One request under /dav with HTTP Basic (unless `auth` is null). */
export async function dav(
  s: TestServer,
  method: string,
  path: string,
  o: { auth?: string | null; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<DavResult> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) }
  if (o.auth) headers['Authorization'] = o.auth
  const res = await fetch(`${s.url}/dav${path}`, {
    method,
    headers,
    ...(o.body !== undefined ? { body: o.body } : {}),
  })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** The Wharf error type in a WebDAV error body. */
export function davType(r: DavResult): string | undefined {
  return /<W:type>([^<]*)<\/W:type>/.exec(r.text)?.[1]
}

/** Points the site's webhook at the listener for uploads, renames and moves. */
export async function hookTo(s: TestServer, listener: TestListener): Promise<void> {
  const r = await call(s, 'PATCH', '/webhook_settings', {
    key: s.adminKey,
    body: { url: listener.url, triggers: ['Upload', 'Rename', 'Move', 'Delete'], enabled: true },
  })
  expect(r.status, r.text).toBe(200)
}

/** The Upload webhooks the listener has received for `path`. */
export function uploadsOf(listener: TestListener, path: string) {
  return listener.received.filter((r) => r.json?.operation === 'Upload' && r.json?.path === path)
}

/** The interfaces of the history entries of a file, through GET /history/files/{path}. */
export async function historyInterfaces(s: TestServer, path: string): Promise<string[]> {
  const r = await call(s, 'GET', `/history/files/${path}`, { key: s.adminKey })
  expect(r.status, r.text).toBe(200)
  return (r.body as { interface: string }[]).map((a) => a.interface)
}

/** A request whose path is sent exactly as written (fetch would resolve `..` and `%2e%2e` itself). */
export function rawDav(s: TestServer, method: string, rawPath: string, auth: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${s.url}/`,
      { method, path: `/dav${rawPath}`, headers: { Authorization: auth } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a real client to its end (killed after `timeoutMs`), `input` on its standard input. */
export function runClient(
  cmd: string,
  args: string[],
  o: { env?: Record<string, string>; input?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, ...(o.env ?? {}) },
      ...(o.cwd ? { cwd: o.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000)
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(o.input ?? '')
  })
}

export const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex')
