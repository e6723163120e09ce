// `BLOB_STORE=s3 npm run bench:transfer`: the same 1 GiB upload and download through Wharf on the
// S3 store, in direct mode (presigned URLs: the bytes go between the client and the bucket) and in
// proxy mode (every byte through Wharf), next to the AWS SDK alone against the same S3 server in
// the same run: `@aws-sdk/lib-storage`'s `Upload` with the same part size and parts in flight, and
// a `GetObject` streamed to a file. The S3 server is s3rver on loopback in a child process (the
// one the tests use), so it shares the machine's CPUs with Wharf and the client.
// BENCH_S3_MODES (`direct,proxy`) picks the modes to run.
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import readline from 'node:readline'
import { pipeline } from 'node:stream/promises'
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { children, cleanups, fmt, memory, phasedRss, root, startWharf, stopChild, table } from './harness.js'

const TARGETS = { direct: 0.9, proxy: 0.5 }
const TARGET_RSS_MB = 150
/** s3rver's fixed key pair. */
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

async function startS3rver(dir) {
  const child = spawn(process.execPath, [path.join(root, 'test', 'helpers', 's3rver-main.mjs'), dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  children.add(child)
  const [line] = await Promise.race([
    new Promise((resolve) =>
      readline.createInterface({ input: child.stdout }).once('line', (l) => resolve([l])),
    ),
    new Promise((_, reject) =>
      child.once('exit', () => reject(new Error('s3rver exited before it listened'))),
    ),
  ])
  const { port } = JSON.parse(line)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      child.stdin.end()
      await exited
    },
  }
}

/** The AWS SDK alone: Upload with Wharf's part size and parts in flight. */
async function sdkUpload(client, bucket, src, partSize, parallel) {
  const key = `sdk/${crypto.randomBytes(4).toString('hex')}.bin`
  const t = process.hrtime.bigint()
  await new Upload({
    client,
    params: { Bucket: bucket, Key: key, Body: fs.createReadStream(src.file, { highWaterMark: 1024 * 1024 }) },
    partSize,
    queueSize: parallel,
  }).done()
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, key }
}

/** The AWS SDK alone: GetObject streamed to a file on the same disk, flushed. */
async function sdkDownload(client, bucket, key, src, dir) {
  const dst = path.join(dir, `sdk-${crypto.randomBytes(4).toString('hex')}.bin`)
  const t = process.hrtime.bigint()
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  await pipeline(out.Body, fs.createWriteStream(dst, { flush: true }))
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  const size = (await fsp.stat(dst)).size
  await fsp.rm(dst)
  if (size !== src.size) throw new Error(`GetObject gave ${size} bytes`)
  return ms
}

/**
 * Runs both modes; `upload` and `download` are transfer.js's Files.com flows. Returns whether
 * every target was met.
 */
export async function benchS3({ src, work, parallel, partMb, upload, download }) {
  const s3dir = path.join(work, 's3rver')
  await fsp.mkdir(s3dir)
  const s3 = await startS3rver(s3dir)
  cleanups.push(() => s3.close())
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  cleanups.push(async () => client.destroy())
  const bucket = `bench-${crypto.randomBytes(4).toString('hex')}`
  await client.send(new CreateBucketCommand({ Bucket: bucket }))
  const partSize = (partMb || 5) * 1024 * 1024
  const mbps = (ms) => src.size / 1024 / 1024 / (ms / 1000)
  const rows = [['run', 'MB/s', 'seconds', 'vs AWS SDK alone', 'Wharf peak RSS MiB', 'targets']]
  let allOk = true

  /** The SDK's upload and download, timed, the object then removed (the disk is shared). */
  async function sdkRound() {
    const up = await sdkUpload(client, bucket, src, partSize, parallel)
    const down = await sdkDownload(client, bucket, up.key, src, work)
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: up.key }))
    return { up: up.ms, down }
  }

  const modes = (process.env['BENCH_S3_MODES'] || 'direct,proxy').split(',').map((m) => m.trim())
  for (const mode of modes) {
    if (!(mode in TARGETS)) throw new Error(`BENCH_S3_MODES: unknown mode ${mode} (direct or proxy)`)
    const w = await startWharf(`Wharf, S3 ${mode}`, undefined, {
      BLOB_STORE: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_PREFIX: `wharf-${mode}`,
      S3_FORCE_PATH_STYLE: 'true',
      S3_TRANSFER_MODE: mode,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      ...(partMb ? { UPLOAD_PART_SIZE: String(partSize) } : {}),
    })
    try {
      const before = await memory(w.proc.child.pid)
      // The SDK before and after Wharf's transfers, so drift on a busy machine hits both sides.
      const sdk1 = await sdkRound()
      const name = `bench/${mode}.bin`
      const phases = phasedRss(w.proc.child.pid)
      const up = await upload(w, src, name, phases.phase)
      await phases.phase('download')
      // Twice, as the SDK's download is timed twice: a single download moved by up to a fifth
      // between runs on the same machine, with Wharf out of the bytes' way in direct mode.
      const downs = [await download(w, src, name, work), await download(w, src, name, work)]
      const down = { ms: (downs[0].ms + downs[1].ms) / 2 }
      const most = await phases.stop()
      const transferMax = Math.max(...most.values())
      const sdk2 = await sdkRound()
      const mem = await memory(w.proc.child.pid)
      console.log(
        `  S3 ${mode}: ${up.parts} parts of ${fmt(up.partSize / 1024 / 1024, 1)} MiB, action=end took ${fmt(up.endMs)} ms; Wharf RSS ${fmt(before.now)} MiB at start (peak ${fmt(before.peak)} by then: start-up and the admin's password login), at most ${fmt(transferMax)} MiB during the transfers (${[...most].map(([phase, mib]) => `${phase} ${fmt(mib)}`).join(', ')}), peak ${fmt(mem.peak)} MiB`,
      )
      for (const [what, ms, base] of [
        ['upload', up.ms, (sdk1.up + sdk2.up) / 2],
        ['download (mean of 2)', down.ms, (sdk1.down + sdk2.down) / 2],
      ]) {
        const ratio = base / ms
        const ok = ratio >= TARGETS[mode] && mem.peak < TARGET_RSS_MB
        allOk &&= ok
        rows.push([
          `${what}, S3 ${mode}`,
          fmt(mbps(ms)),
          fmt(ms / 1000, 1),
          fmt(ratio, 2),
          fmt(mem.peak),
          ok ? 'met' : 'MISSED',
        ])
      }
      for (const [what, ms] of [
        ['AWS SDK Upload (mean)', (sdk1.up + sdk2.up) / 2],
        ['AWS SDK GetObject (mean)', (sdk1.down + sdk2.down) / 2],
      ]) {
        rows.push([what, fmt(mbps(ms)), fmt(ms / 1000, 1), '1.00', '', ''])
      }
    } finally {
      await stopChild(w.proc)
    }
  }
  console.log(`\n${table(rows)}\n`)
  console.log(
    `Targets: direct mode at least ${TARGETS.direct * 100}% and proxy mode ${TARGETS.proxy * 100}% of the AWS SDK's MB/s, Wharf's peak RSS under ${TARGET_RSS_MB} MiB: ${allOk ? 'met' : 'MISSED'}`,
  )
  return allOk
}
