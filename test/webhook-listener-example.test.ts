import { type ChildProcess, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { standardSignature } from '../src/webhooks/webhook-signature.js'
import { download, target, uploaded, withChecksums } from './helpers/files.js'
import { call, dialects, useServer } from './helpers/server.js'
import { freePort } from './helpers/server-process.js'

const WAIT = { timeout: 20_000, interval: 50 }
const sha256 = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')

/** The README's listener example: the `js` block of the Webhooks section that runs a server. */
async function readmeListener(): Promise<string> {
  const readme = await fs.readFile(path.resolve(import.meta.dirname, '..', 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const found = blocks.filter((b) => b.includes('createServer') && b.includes('file_download_url'))
  expect(found, 'one listener example in the README').toHaveLength(1)
  return found[0]!
}

/**
 * The README's webhook listener, run as written against a real Wharf: it verifies the signature,
 * drops repeats by id, ignores a late event of a path, and fetches the file from the file-aware
 * link and checks its bytes.
 */
describe.each(dialects)('the README’s webhook listener (%s)', (dialect) => {
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.1,0.1' })
  let child: ChildProcess | undefined
  let dir: string | undefined
  afterAll(async () => {
    child?.kill()
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  it('verifies, deduplicates, keeps each path’s order and fetches the file', async () => {
    const port = await freePort()
    const hook = `http://127.0.0.1:${port}/hook`
    const set = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: hook, triggers: ['Upload', 'Download'], enabled: true },
    })
    expect(set.status, set.text).toBe(200)
    const secret = (await call(s, 'GET', '/webhook_settings', { key: s.adminKey })).body
      .signing_secret as string
    const endpoints = (await call(s, 'GET', '/webhook_endpoints', { key: s.adminKey })).body as any[]
    const site = endpoints.find((e) => e.behavior_id === null)
    const aware = await call(s, 'PATCH', `/webhook_endpoints/${site.id}`, {
      key: s.adminKey,
      body: { file_aware: true },
    })
    expect(aware.status, aware.text).toBe(200)

    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-listener-'))
    const file = path.join(dir, 'listener.mjs')
    await fs.writeFile(file, await readmeListener())
    const lines: string[] = []
    child = spawn(process.execPath, [file], {
      env: { PATH: process.env['PATH'], SIGNING_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      lines.splice(0, lines.length, ...out.split('\n').filter((l) => l !== ''))
    })
    let err = ''
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString()
    })
    /** A request to the listener, signed with `key` (or not at all). */
    const post = async (body: string, headers: Record<string, string>) => {
      const r = await fetch(hook, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      })
      return r.status
    }
    const signed = (id: string, body: string, key = secret) => {
      const ts = Math.floor(Date.now() / 1000)
      return {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': standardSignature(key, id, ts, body),
      }
    }
    // Up, and refusing what Wharf did not sign.
    const forged = '{"operation":"Upload","path":"ex/forged.txt"}'
    const other = `whsec_${crypto.randomBytes(24).toString('base64')}`
    await vi.waitFor(async () => expect(await post(forged, {})).toBe(401), WAIT)
    expect(await post(forged, { ...signed('msg_forged', forged, other), 'webhook-sequence': '1' })).toBe(401)

    // An upload: the listener fetches the bytes of that version and checks their size.
    const content = 'hello listener'
    await uploaded(s, 'ex/report.csv', content)
    await vi.waitFor(() => expect(lines).toHaveLength(1), WAIT)
    expect(lines[0]).toBe(`Upload ex/report.csv 1 ${content.length} bytes, sha256 ${sha256(content)}`)
    // A download once the SHA-256 is known: the bytes are checked against file_sha256 too.
    await withChecksums(target(s), 'ex/report.csv')
    expect((await download(target(s), 'ex/report.csv')).toString()).toBe(content)
    await vi.waitFor(() => expect(lines).toHaveLength(2), WAIT)
    expect(lines[1]).toBe(`Download ex/report.csv 2 ${content.length} bytes, sha256 ${sha256(content)}`)
    const notifications = await s.container.db
      .selectFrom('webhook_notifications')
      .select(['message_id', 'file_sha256'])
      .where('path', '=', 'ex/report.csv')
      .orderBy('id')
      .execute()
    expect(notifications[1]!.file_sha256).toBe(sha256(content))

    // The upload's event sent again (same id): answered, not applied twice.
    const attempts = await call(s, 'GET', `/webhook_endpoints/${site.id}/attempts`, { key: s.adminKey })
    const first = (attempts.body as any[]).find((a) => a.event_id === notifications[0]!.message_id)
    expect((await call(s, 'POST', `/webhook_attempts/${first.id}/resend`, { key: s.adminKey })).status).toBe(
      204,
    )
    await vi.waitFor(async () => {
      const all = await call(s, 'GET', `/webhook_endpoints/${site.id}/attempts`, { key: s.adminKey })
      const again = (all.body as any[]).filter((a) => a.event_id === notifications[0]!.message_id)
      expect(again.map((a) => [a.attempt, a.response_code])).toEqual([
        [1, 204],
        [2, 204],
      ])
    }, WAIT)
    // A late event of the path (an older number than one applied): answered, not applied.
    const late = JSON.stringify({ operation: 'Upload', path: 'ex/report.csv', attempt: 5 })
    expect(await post(late, { ...signed('msg_late', late), 'webhook-sequence': '1' })).toBe(204)
    // The listener's own fetches made no events (a Download event each would never end).
    const made = await s.container.db
      .selectFrom('webhook_notifications')
      .select('operation')
      .where('path', '=', 'ex/report.csv')
      .orderBy('id')
      .execute()
    expect(made.map((n) => n.operation)).toEqual(['Upload', 'Download'])
    expect(lines).toHaveLength(2)
    expect(err).toBe('')
  })
})
