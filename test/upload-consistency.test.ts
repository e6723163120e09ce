import { type ChildProcess, execFile, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  beginUpload,
  download,
  endUpload,
  md5,
  partUrl,
  putBytes,
  req,
  split,
  stageUpload,
  type Target,
} from './helpers/files.js'
import { dialects, expectError, startServer, type TestServer } from './helpers/server.js'
import { expectNoLeakedBlobs, stagedRefs, stalledPut, until } from './helpers/storage.js'

/**
 * What concurrent and interrupted uploads leave behind: one whole file or none, never a mix, and
 * no stored bytes that nothing points to and nothing will delete.
 */
const PART = 64 * 1024

describe.each(dialects)('upload consistency (%s)', (dialect) => {
  let s: TestServer
  let t: Target
  let storage: string
  beforeAll(async () => {
    s = await startServer(dialect, { UPLOAD_PART_SIZE: String(PART) })
    t = { api: s.api, key: s.adminKey }
    storage = path.join(s.container.config.dataDir, 'storage')
  })
  afterAll(async () => s?.close())

  it('ends eight concurrent uploads of one path in one file holding exactly one of them', async () => {
    const p = `race-${crypto.randomBytes(3).toString('hex')}/same.bin`
    const contents = Array.from({ length: 8 }, (_, i) => crypto.randomBytes(PART + 1000 * (i + 1)))
    // Every upload staged in full first, then every `end` at once.
    const refs = await Promise.all(contents.map((c) => stageUpload(t, p, c)))
    const ends = await Promise.all(refs.map((ref) => endUpload(t, p, ref)))
    expect(ends.map((e) => e.status).every((st) => st >= 200 && st < 300)).toBe(true)

    const rows = await s.container.db
      .selectFrom('files')
      .selectAll()
      .where('path_lower', '=', p.toLowerCase())
      .execute()
    expect(rows).toHaveLength(1)
    const row = rows[0]!
    const bytes = await download(t, p)
    const winner = contents.findIndex((c) => c.equals(bytes))
    expect(winner).toBeGreaterThanOrEqual(0)
    expect(row.md5).toBe(md5(bytes))
    expect(Number(row.size)).toBe(bytes.length)
    // The answer of the upload that won names the same bytes.
    expect(ends.some((e) => e.body.md5 === row.md5 && e.body.size === bytes.length)).toBe(true)

    // One create and seven replacements in the history (besides the download's read).
    const actions = await s.container.db
      .selectFrom('actions')
      .select('action')
      .where('path', '=', p)
      .where('action', '!=', 'read')
      .execute()
    expect(actions.map((a) => a.action).sort()).toEqual(['create', ...Array(7).fill('update')].sort())

    // Nothing of the uploads is left: no upload rows, no staged parts, no unaccounted blob.
    const open = await s.container.db.selectFrom('uploads').select('ref').where('ref', 'in', refs).execute()
    expect(open).toEqual([])
    expect((await stagedRefs(storage)).filter((r) => refs.includes(r))).toEqual([])
    await expectNoLeakedBlobs(s.container.db, storage)
  })

  it('keeps nothing of a part whose upload is cut off midway, and the upload can be finished', async () => {
    const p = `cut-${crypto.randomBytes(3).toString('hex')}/file.bin`
    const bytes = crypto.randomBytes(2 * PART + 10)
    const first = await beginUpload(t, p)
    const part1 = await partUrl(t, p, first.ref, 1)
    const stalled = await stalledPut(part1.upload_uri, PART, bytes.subarray(0, PART / 2), storage)
    stalled.abort()
    expect(await stalled.answered).toBe('aborted')

    // The half-written part is dropped: no staged copy, no record, no temporary file.
    expect(await until(async () => (await fs.readdir(path.join(storage, 'tmp'))).length === 0)).toBe(true)
    const upload = await s.container.db
      .selectFrom('uploads')
      .select('id')
      .where('ref', '=', first.ref)
      .executeTakeFirstOrThrow()
    const parts = await s.container.db
      .selectFrom('upload_parts')
      .select('part_number')
      .where('upload_id', '=', upload.id)
      .execute()
    expect(parts).toEqual([])
    await expect(fs.stat(path.join(storage, 'parts', first.ref, '1'))).rejects.toThrow()

    // No file appeared, and the server goes on answering.
    expectError(await req(t, 'GET', `/file_actions/metadata/${p}`), 404, 'not-found/file-not-found')

    // Sending the parts again finishes the same upload.
    const chunks = split(bytes, PART)
    for (let i = 0; i < chunks.length; i++) {
      const u = await partUrl(t, p, first.ref, i + 1)
      expect((await putBytes(u.upload_uri, chunks[i]!)).status).toBeLessThan(300)
    }
    const end = await endUpload(t, p, first.ref)
    expect(end.status).toBeLessThan(300)
    expect((await download(t, p)).equals(bytes)).toBe(true)
    await expectNoLeakedBlobs(s.container.db, storage)
  })
})

/**
 * The built server as a child process (as `npm start` runs it), killed with SIGKILL in the middle
 * of an upload and started again on the same DATA_DIR. It is built into a folder of its own, so
 * this file never races test/process.test.ts over dist/.
 */
describe('upload interrupted by a killed server process (sqlite)', () => {
  const run = promisify(execFile)
  const root = path.resolve(import.meta.dirname, '..')
  // Under node_modules, so the build resolves the project's dependencies as dist/ does.
  const outDir = path.join(root, 'node_modules', '.cache', 'wharf-upload-crash-build')
  const cli = path.join(outDir, 'cli.js')
  const children: ChildProcess[] = []
  let dataDir: string

  async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
      const srv = net.createServer()
      srv.listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as net.AddressInfo
        srv.close(() => resolve(port))
      })
      srv.on('error', reject)
    })
  }

  const env = () => ({
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    DATA_DIR: dataDir,
    ADMIN_PASSWORD: 'admin-password-1',
    UPLOAD_PART_SIZE: String(PART),
    LOG_LEVEL: 'warn',
  })

  async function serve(): Promise<{ child: ChildProcess; api: string; exited: Promise<unknown> }> {
    const port = await freePort()
    const child = spawn(process.execPath, [cli, 'serve'], {
      env: { ...env(), PORT: String(port), LOG_LEVEL: 'info' },
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    const exited = new Promise((resolve) => child.once('exit', resolve))
    let out = ''
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        output += d
        out += d
        if (out.includes('Wharf is listening')) resolve()
      })
      child.stderr!.on('data', (d) => {
        output += d
        out += d
      })
      child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
      // A start that never completes fails with what the server said, not as a bare timeout.
      setTimeout(() => reject(new Error(`server did not start: ${out}`)), 20_000).unref()
    })
    child.stdout!.resume()
    return { child, api: `http://127.0.0.1:${port}/api/rest/v1`, exited }
  }

  beforeAll(async () => {
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
    // Incremental: a second run rebuilds only what changed. A type error elsewhere is the type
    // check's business: tsc still emits, and this test runs.
    const buildInfo = path.join(outDir, '.tsbuildinfo')
    const args = [
      '-p',
      'tsconfig.build.json',
      '--outDir',
      outDir,
      '--incremental',
      '--tsBuildInfoFile',
      buildInfo,
    ]
    await run(process.execPath, [tsc, ...args], { cwd: root }).catch(() => undefined)
    await fs.access(cli)
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-crash-'))
  }, 120_000)

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true })
  })

  /** What the servers printed, for a failure's message. */
  let output = ''
  /** Fails with the step's name (and what the servers said) instead of hanging to the timeout. */
  async function step<T>(name: string, work: Promise<T>, ms = 20_000): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${name} took over ${ms / 1000} s; servers said:\n${output}`)),
        ms,
      )
    })
    try {
      return await Promise.race([work, late])
    } finally {
      clearTimeout(timer)
    }
  }

  it('shows no file after a SIGKILL mid-upload, and the upload finishes after a restart', async () => {
    const made = await step(
      'creating a key with the CLI',
      run(process.execPath, [cli, 'api-keys', 'create', '--site-wide'], { env: env(), cwd: root }),
    )
    const key = JSON.parse(made.stdout).key as string
    const storage = path.join(dataDir, 'storage')
    const bytes = crypto.randomBytes(3 * PART + 123)
    const chunks = split(bytes, PART)
    const p = 'crash/big.bin'

    const first = await serve()
    let t: Target = { api: first.api, key }
    const opened = await step('opening the upload', beginUpload(t, p))
    const part1 = await step('asking for part 1', partUrl(t, p, opened.ref, 1))
    expect((await step('sending part 1', putBytes(part1.upload_uri, chunks[0]!))).status).toBeLessThan(300)
    const part2 = await step('asking for part 2', partUrl(t, p, opened.ref, 2))
    const stalled = await step(
      'starting part 2',
      stalledPut(part2.upload_uri, PART, chunks[1]!.subarray(0, PART / 3), storage),
    )
    first.child.kill('SIGKILL')
    await step('the killed server exiting', first.exited)
    expect(await step('part 2 seeing the connection drop', stalled.answered)).toBe('aborted')

    const second = await serve()
    t = { api: second.api, key }
    expectError(
      await step('metadata after restart', req(t, 'GET', `/file_actions/metadata/${p}`)),
      404,
      'not-found/file-not-found',
    )
    const listing = await step('listing after restart', req(t, 'GET', '/folders/crash'))
    if (listing.status === 200) expect(listing.body).toEqual([])
    else expectError(listing, 404, 'not-found/folder-not-found')

    // The same upload goes on: part 1 survived the crash, parts 2… are sent again.
    for (let i = 1; i < chunks.length; i++) {
      const u = await step(`asking for part ${i + 1} again`, partUrl(t, p, opened.ref, i + 1))
      expect(
        (await step(`sending part ${i + 1} again`, putBytes(u.upload_uri, chunks[i]!))).status,
      ).toBeLessThan(300)
    }
    const end = await step('ending the upload', endUpload(t, p, opened.ref))
    expect(end.status).toBeLessThan(300)
    expect(end.body.md5).toBe(md5(bytes))
    expect((await step('downloading it', download(t, p))).equals(bytes)).toBe(true)

    // A fresh upload of another file works too.
    const again = crypto.randomBytes(PART + 1)
    const ref = await step('a second upload', stageUpload(t, 'crash/again.bin', again))
    expect((await step('ending it', endUpload(t, 'crash/again.bin', ref))).status).toBeLessThan(300)
    expect((await step('downloading it', download(t, 'crash/again.bin'))).equals(again)).toBe(true)

    second.child.kill('SIGTERM')
    await step('the server stopping on SIGTERM', second.exited)
  }, 120_000)
})
