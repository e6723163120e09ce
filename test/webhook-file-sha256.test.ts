import crypto from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { target, uploaded, withChecksums } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, useServer } from './helpers/server.js'

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex')

/**
 * `file_sha256` of a file-aware endpoint's body: null until the checksum job (which reads the
 * bytes once for md5, CRC-32 and SHA-256) has run, the version's SHA-256 from then on, even on
 * an attempt made after the file was replaced; the File resource is unchanged (sha256 null).
 */
describe.each(dialects)('file_sha256 of file-aware webhooks (%s)', (dialect) => {
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.1,0.1' })
  let l: TestListener | undefined
  afterAll(async () => {
    await l?.close()
  })

  it('reports null before the checksum job, then the SHA-256 of the version that fired the event', async () => {
    let summed!: () => void
    const gate = new Promise<void>((r) => {
      summed = r
    })
    // Attempt 1 fails at once, attempt 2 once the checksum job has run, attempt 3 succeeds.
    l = await startListener(async (r: Received) => {
      if (r.json.attempt === 2) await gate
      return r.json.attempt >= 3 ? 200 : 500
    })
    const b = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'summed', behavior: 'webhook', value: { urls: [l.url], triggers: ['Upload'] } },
    })
    expect(b.status, b.text).toBe(201)
    const endpoints = await call(s, 'GET', '/webhook_endpoints', { key: s.adminKey })
    const e = (endpoints.body as any[]).find((x) => x.url === l!.url)
    const p = await call(s, 'PATCH', `/webhook_endpoints/${e.id}`, {
      key: s.adminKey,
      body: { file_aware: true },
    })
    expect(p.status, p.text).toBe(200)

    await s.container.checksums.stop()
    await uploaded(s, 'summed/report.csv', 'version one')
    await l.waitFor(2)
    await s.container.checksums.start()
    const file = await withChecksums(target(s), 'summed/report.csv')
    // The File resource stays as it was: its sha256 field (Files.com's) is null.
    expect(file.sha256).toBeNull()
    summed()
    const [first, second, third] = await l.waitFor(3)
    expect([first!.json.attempt, first!.json.file_sha256]).toEqual([1, null])
    expect([second!.json.attempt, second!.json.file_sha256]).toEqual([2, null])
    expect([third!.json.attempt, third!.json.file_sha256]).toEqual([3, sha256('version one')])

    // Replaced: a resend of the first event still reports its version's SHA-256, the new
    // version's event its own.
    await uploaded(s, 'summed/report.csv', 'version two, longer')
    await withChecksums(target(s), 'summed/report.csv')
    const attempts = await call(s, 'GET', `/webhook_endpoints/${e.id}/attempts`, { key: s.adminKey })
    const last = (attempts.body as any[]).find(
      (a) => a.attempt === 3 && a.event_id === first!.headers['webhook-id'],
    )
    const resend = await call(s, 'POST', `/webhook_attempts/${last.id}/resend`, { key: s.adminKey })
    expect(resend.status, resend.text).toBe(204)
    const all = await l.waitFor(5)
    const again = all.find(
      (r) => r.headers['webhook-id'] === first!.headers['webhook-id'] && r.json.attempt === 4,
    )
    expect(again?.json).toMatchObject({ file_size: 11, file_sha256: sha256('version one') })
    const newer = all.find((r) => r.headers['webhook-id'] !== first!.headers['webhook-id'])
    expect(newer?.json.file_size).toBe(19)
    expect([null, sha256('version two, longer')]).toContain(newer?.json.file_sha256)
  })
})
