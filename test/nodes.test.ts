import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  beginUpload,
  bytes,
  download,
  endUpload,
  md5,
  partUrl,
  putBytes,
  type Reply,
  req,
  type Target,
  UploadStepError,
  withChecksums,
} from './helpers/files.js'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './helpers/s3-server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcess,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'
import { startWebhookRecorder, type WebhookRecorder } from './helpers/webhook-recorder.js'

/**
 * Several Wharf nodes serving one site: two `npm start` processes, each with a DATA_DIR of its
 * own, sharing one PostgreSQL schema and one S3 bucket (s3rver), with no stickiness between
 * them: whatever one node began, made or signed, the other one finishes, accepts or serves, and
 * background work is done once between them. Needs PostgreSQL (SQLite is one process's database).
 */
const PG_URL = process.env['TEST_DATABASE_URL']
const PART = 256 * 1024

let servers: ServerProcesses
let s3: S3TestServer
let site: ProcessSite
let hook: WebhookRecorder
let a: ServerProcess
let b: ServerProcess
const scratch: string[] = []

/** The environment of one node: the site's, with a DATA_DIR of its own. */
async function nodeEnv(): Promise<NodeJS.ProcessEnv> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-node-'))
  scratch.push(dataDir)
  return site.env({ DATA_DIR: dataDir })
}

const via = (p: ServerProcess): Target => ({ api: p.api, key: site.key })

/** A URL one node made, sent to the other node instead (as a load balancer may). */
function toNode(url: string, p: ServerProcess): string {
  const u = new URL(url)
  const other = new URL(p.api)
  u.host = other.host
  return u.toString()
}

function ok(r: Reply, status: number): Reply {
  expect(r.status, r.text).toBe(status)
  return r
}

const pollWithin = (ms: number) => ({ timeout: ms, interval: 100 })

describe.skipIf(!PG_URL)(
  'two nodes on one PostgreSQL schema and one bucket (needs TEST_DATABASE_URL)',
  () => {
    beforeAll(async () => {
      servers = serverProcesses()
      s3 = await startS3Server()
      const bucket = await s3.bucket()
      hook = await startWebhookRecorder(() => 204)
      site = await processSite(servers, 'postgres', {
        BLOB_STORE: 's3',
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: bucket,
        S3_PREFIX: 'site/',
        S3_FORCE_PATH_STYLE: 'true',
        // Wharf's own signed part and download links, so that one node's links are sent to the
        // other (direct mode's links are the bucket's, and test/s3-direct.test.ts ends a direct
        // upload from a second process).
        S3_TRANSFER_MODE: 'proxy',
        AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
        UPLOAD_PART_SIZE: String(PART),
        RATE_LIMIT_PER_SECOND: '100000',
        RATE_LIMIT_BURST: '100000',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_RETRY_SCHEDULE: Array(20).fill('0.2').join(','),
        // A lease of 2 × (0.5 + 1) + 5 = 8 s: how long a killed node's deliveries wait.
        WEBHOOK_CONNECT_TIMEOUT_MS: '500',
        WEBHOOK_TIMEOUT_MS: '1000',
        EXPORT_PAGE_SIZE: '2',
      })
      // Started at once: both generate SFTP host keys on a database that has none.
      ;[a, b] = await Promise.all([servers.serve(await nodeEnv()), servers.serve(await nodeEnv())])
    }, 120_000)

    afterAll(async () => {
      await servers?.killAll()
      await hook?.close()
      await site?.remove()
      await s3?.close()
      for (const dir of scratch) await fs.rm(dir, { recursive: true, force: true })
    })

    it('serves what either node took in, finishes uploads the other began, and accepts its links', async () => {
      const [ta, tb] = [via(a), via(b)]
      ok(await req(ta, 'POST', '/folders/both'), 201)

      // A whole upload through A, read through B.
      const whole = bytes(3 * PART + 1000, 1)
      const first = await beginUpload(ta, 'both/whole.bin')
      for (let n = 1; n <= 4; n++) {
        const p = await partUrl(ta, 'both/whole.bin', first.ref, n)
        ok(await putBytes(p.upload_uri, whole.subarray((n - 1) * PART, n * PART)), 200)
      }
      expect(ok(await endUpload(ta, 'both/whole.bin', first.ref), 201).body).toMatchObject({
        size: whole.length,
      })
      expect(md5(await download(tb, 'both/whole.bin'))).toBe(md5(whole))
      // The checksums come from a background job (on either node); B shows them once known.
      expect(await withChecksums(tb, 'both/whole.bin')).toMatchObject({ size: whole.length, md5: md5(whole) })

      // Begun on A; one part sent to A, the other to B with A's signed link; ended on B.
      const mixed = bytes(PART + 500, 2)
      const begun = await beginUpload(ta, 'both/mixed.bin')
      const p1 = await partUrl(ta, 'both/mixed.bin', begun.ref, 1)
      ok(await putBytes(p1.upload_uri, mixed.subarray(0, PART)), 200)
      const p2 = await partUrl(ta, 'both/mixed.bin', begun.ref, 2)
      ok(await putBytes(toNode(p2.upload_uri, b), mixed.subarray(PART)), 200)
      // A link whose signature does not hold is refused by the other node too.
      const forged = new URL(toNode(p2.upload_uri, b))
      forged.searchParams.set('signature', '0'.repeat(64))
      const refused = await putBytes(forged.toString(), Buffer.from('x'))
      expect(refused.status, refused.text).toBe(401)
      expect(JSON.parse(refused.text).type).toBe('not-authenticated/invalid-or-expired-code')
      expect(ok(await endUpload(tb, 'both/mixed.bin', begun.ref), 201).body).toMatchObject({
        size: mixed.length,
      })

      // A download link A signed, fetched from B.
      const shown = ok(await req(ta, 'GET', '/files/both/mixed.bin'), 200)
      const res = await fetch(toNode(shown.body.download_uri as string, b))
      expect(res.status).toBe(200)
      expect(md5(Buffer.from(await res.arrayBuffer()))).toBe(md5(mixed))

      // A list cursor A signed, followed on B.
      const page = ok(await req(ta, 'GET', '/folders/both?per_page=1'), 200)
      const cursor = page.headers.get('x-files-cursor-next')
      expect(cursor).toBeTruthy()
      const next = ok(
        await req(tb, 'GET', `/folders/both?per_page=1&cursor=${encodeURIComponent(cursor!)}`),
        200,
      )
      expect([page.body[0].path, next.body[0].path].sort()).toEqual(['both/mixed.bin', 'both/whole.bin'])

      // One SFTP host key set, whichever node a client reaches.
      const keysA = ok(await req(ta, 'GET', '/sftp_host_keys'), 200).body
      expect(keysA).toHaveLength(2)
      expect(ok(await req(tb, 'GET', '/sftp_host_keys'), 200).body).toEqual(keysA)
    }, 60_000)

    it('delivers each webhook once and builds each export once between the two', async () => {
      const [ta, tb] = [via(a), via(b)]
      ok(
        await req(ta, 'PATCH', '/webhook_settings', {
          url: hook.url,
          triggers: ['Create Folder'],
          enabled: true,
        }),
        200,
      )
      const paths = Array.from({ length: 60 }, (_, i) => `once-${i}`)
      await servers.step(
        'creating 60 folders through both',
        Promise.all(
          paths.map((p, i) => req(i % 2 ? tb : ta, 'POST', `/folders/${p}`).then((r) => ok(r, 201))),
        ),
      )
      await servers.step('60 deliveries', hook.waitFor(60, 20_000))
      const rows = await vi.waitFor(async () => {
        const r = await site.db.db
          .selectFrom('webhook_notifications')
          .select(['path', 'state'])
          .where('path', 'like', 'once-%')
          .execute()
        expect(r.filter((x) => x.state === 'delivered')).toHaveLength(60)
        return r
      }, pollWithin(20_000))
      expect(rows.map((r) => r.path).sort()).toEqual([...paths].sort())
      const once = hook.deliveries.filter((d) => d.path?.startsWith('once-'))
      expect(once.map((d) => d.path).sort()).toEqual([...paths].sort())
      expect(new Set(once.map((d) => d.id)).size).toBe(60)

      // Exports asked of both nodes: each is claimed once, by one worker, and built.
      const made = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          req(i % 2 ? tb : ta, 'POST', '/history_exports', {}).then((r) => ok(r, 201).body.id as number),
        ),
      )
      const built = await vi.waitFor(async () => {
        const r = await site.db.db
          .selectFrom('exports')
          .select(['id', 'status', 'attempts', 'lease_owner'])
          .where('id', 'in', made)
          .execute()
        expect(r.filter((x) => x.status === 'ready')).toHaveLength(6)
        return r
      }, pollWithin(30_000))
      expect(built.map((r) => [r.attempts, r.lease_owner])).toEqual(made.map(() => [1, null]))
      // Either node serves what the other built.
      for (const id of made) {
        const shown = ok(await req(tb, 'GET', `/history_exports/${id}`), 200)
        expect(shown.body.status).toBe('ready')
        const csv = await fetch(toNode(shown.body.results_url as string, a))
        expect(csv.status).toBe(200)
      }
    }, 90_000)

    it('loses nothing committed when a node is killed mid-work, and the other finishes it', async () => {
      const [ta, tb] = [via(a), via(b)]
      ok(await req(ta, 'POST', '/folders/kill'), 201)

      // Staged through A, to be ended on B once A is gone.
      const left = bytes(PART + 77, 9)
      const staged = await beginUpload(ta, 'kill/left.bin')
      for (let n = 1; n <= 2; n++) {
        const p = await partUrl(ta, 'kill/left.bin', staged.ref, n)
        ok(await putBytes(p.upload_uri, left.subarray((n - 1) * PART, n * PART)), 200)
      }

      // Deliveries hang, so that A holds some when it dies.
      hook.answer(() => 'hang')
      const paths = Array.from({ length: 20 }, (_, i) => `crash-${i}`)
      await servers.step(
        'creating 20 folders through A',
        Promise.all(paths.map((p) => req(ta, 'POST', `/folders/${p}`).then((r) => ok(r, 201)))),
      )

      // Uploads through A, four at a time, until A dies under them.
      const expected = new Map<string, Buffer>()
      const committed: string[] = []
      let dead = false
      const uploader = async (w: number) => {
        for (let i = 0; !dead; i++) {
          const name = `kill/w${w}-${i}.bin`
          const data = bytes(2 * PART + 100 * w + i, 100 * w + i)
          expected.set(name, data)
          try {
            const first = await beginUpload(ta, name)
            for (let n = 1; n <= 3; n++) {
              const p = await partUrl(ta, name, first.ref, n)
              const put = await putBytes(p.upload_uri, data.subarray((n - 1) * PART, n * PART))
              if (put.status !== 200) throw new UploadStepError(`part ${n}`, put)
            }
            const end = await endUpload(ta, name, first.ref)
            if (end.status !== 201) throw new UploadStepError('end', end)
            committed.push(name)
          } catch (err) {
            // Once A is killed, every step fails (refused connections, cut requests): expected.
            if (dead) return
            throw err
          }
        }
      }
      const uploads = Promise.all([1, 2, 3, 4].map(uploader))
      await servers.step(
        'A holding deliveries and committing uploads',
        vi.waitFor(async () => {
          const held = await site.db.db
            .selectFrom('webhook_notifications')
            .select('id')
            .where('path', 'like', 'crash-%')
            // A's own claims (a lease owner is host:pid:random), not B's.
            .where('lease_owner', 'like', `%:${a.pid}:%`)
            .execute()
          expect(held.length).toBeGreaterThan(0)
          expect(committed.length).toBeGreaterThanOrEqual(4)
        }, pollWithin(20_000)),
        21_000,
      )
      dead = true
      a.child.kill('SIGKILL')
      await servers.step('A exiting', a.exited)
      await servers.step('the uploads through A ending', uploads)
      hook.answer(() => 204)

      // Every upload A committed is whole on B; nothing else under the folder but whole files.
      const listed = ok(await req(tb, 'GET', '/folders/kill?per_page=1000'), 200).body as { path: string }[]
      const names = listed.map((f) => f.path)
      for (const name of committed) expect(names).toContain(name)
      for (const name of names) {
        const want = expected.get(name)
        expect(want, `${name} was never uploaded`).toBeDefined()
        expect(md5(await download(tb, name)), name).toBe(md5(want!))
      }

      // B ends the upload A staged.
      expect(ok(await endUpload(tb, 'kill/left.bin', staged.ref), 201).body).toMatchObject({
        size: left.length,
      })
      expect(md5(await download(tb, 'kill/left.bin'))).toBe(md5(left))

      // B delivers everything, A's claims once their lease has run out: each at least once.
      const rows = await servers.step(
        'B delivering what A held',
        vi.waitFor(async () => {
          const r = await site.db.db
            .selectFrom('webhook_notifications')
            .select(['path', 'state'])
            .where('path', 'like', 'crash-%')
            .execute()
          expect(r.filter((x) => x.state === 'delivered')).toHaveLength(20)
          return r
        }, pollWithin(30_000)),
        31_000,
      )
      expect(rows.map((r) => r.path).sort()).toEqual([...paths].sort())
      const arrived = new Set(hook.deliveries.map((d) => d.path))
      for (const p of paths) expect(arrived.has(p), p).toBe(true)
      const successes = await site.db.db
        .selectFrom('webhook_attempts')
        .select('path')
        .where('success', '=', 1)
        .where('path', 'like', 'crash-%')
        .execute()
      expect(successes.map((r) => r.path).sort()).toEqual([...paths].sort())
    }, 120_000)
  },
)
