// `npm run build && node bench/behavior-uploads.js`: what folder behaviors cost an upload.
//
// Small files uploaded over REST (begin, one part, end) into a folder four levels deep with 100
// behaviors on it and its ancestors (of mixed types, none refusing: extension, pattern and length
// rules, an identity override_upload_filename, append_timestamp rules that do not reach it, locks
// and user folders), next to the same uploads into a tree without any, alternately in the same
// run. Target: the mean upload with behaviors at most 1.1× the one without.
//
// Settings (environment): BENCH_BEHAVIOR_UPLOADS (500 per tree), BENCH_DATABASE_URL (also runs
// against PostgreSQL). See docs/performance.md, "Running the benchmarks".
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {
  abort,
  cleanups,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import { apiJson, uploadFile } from './rest-client.js'

const UPLOADS = intSetting('BENCH_BEHAVIOR_UPLOADS', 500, 10, 1_000_000)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const TARGET = 1.1
const BEHAVIORS = 100
const DEEP = ['ruled', 'ruled/a', 'ruled/a/b', 'ruled/a/b/c', 'ruled/a/b/c/d']

/** The i-th behavior: mixed types spread over the folder and its ancestors, none refusing `.bin`. */
function behaviorAt(i) {
  const path = DEEP[i % DEEP.length]
  const kinds = [
    {
      behavior: 'limit_file_extensions',
      value: { extensions: ['bin', 'csv'], mode: 'allow' },
      recursive: true,
    },
    { behavior: 'limit_file_regex', value: { regex: '^file-\\d+\\.bin$' }, recursive: true },
    { behavior: 'limit_filename_length', value: { max_length: 200 }, recursive: true },
    { behavior: 'override_upload_filename', value: { filename_override_pattern: '{name}' }, recursive: true },
    // Not recursive, on an ancestor: read with the others, applied to none of these uploads.
    { behavior: 'append_timestamp', value: {}, recursive: false },
    { behavior: 'lock_subfolders', value: { level: 'children' }, recursive: false },
    { behavior: 'create_user_folders', value: { permission: 'full' }, recursive: false },
  ]
  const k = kinds[i % kinds.length]
  // append_timestamp only above the folder uploaded to, so that names stay as sent.
  const where = k.behavior === 'append_timestamp' ? DEEP[i % (DEEP.length - 1)] : path
  return { path: where, ...k }
}

async function timed(w, file, name) {
  const t = process.hrtime.bigint()
  const f = await uploadFile(w, file, name, 1)
  if (f.path !== name) throw new Error(`${name} was stored as ${f.path}`)
  return Number(process.hrtime.bigint() - t) / 1e6
}

async function main() {
  await fsp.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first')
  })
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-behaviors-'))
  cleanups.push(() => fsp.rm(work, { recursive: true, force: true }))
  const file = path.join(work, 'small.bin')
  await fsp.writeFile(file, Buffer.alloc(1024, 7))
  console.log(`Wharf behavior upload benchmark: ${UPLOADS} uploads of 1 KiB per tree, ${BEHAVIORS} behaviors`)
  console.log(`Node ${process.version}, ${os.cpus().length} CPU(s); ${new Date().toISOString()}\n`)
  const targets = [{ label: 'SQLite' }]
  if (PG_URL) targets.push({ label: 'PostgreSQL', pg: true })
  const rows = [['run', 'none ms/upload', 'with 100 ms/upload', 'ratio', 'target']]
  let allOk = true
  try {
    for (const t of targets) {
      let url
      if (t.pg) {
        const d = await createPgDatabase(PG_URL)
        cleanups.push(() => dropPgDatabase(PG_URL, d.name))
        url = d.url
      }
      const w = await startWharf(`Wharf, ${t.label}`, url)
      try {
        await apiJson(w, 'POST', `/folders/${DEEP.at(-1)}`, { mkdir_parents: true })
        await apiJson(w, 'POST', '/folders/plain/a/b/c/d', { mkdir_parents: true })
        for (let i = 0; i < BEHAVIORS; i++) await apiJson(w, 'POST', '/behaviors', behaviorAt(i))
        // Warm-up, then alternately, so that drift falls on both.
        for (let i = 0; i < 20; i++) {
          await timed(w, file, `plain/a/b/c/d/file-9000${i}.bin`)
          await timed(w, file, `${DEEP.at(-1)}/file-9000${i}.bin`)
        }
        let none = 0
        let ruled = 0
        for (let i = 0; i < UPLOADS; i++) {
          none += await timed(w, file, `plain/a/b/c/d/file-${i}.bin`)
          ruled += await timed(w, file, `${DEEP.at(-1)}/file-${i}.bin`)
        }
        const ratio = ruled / none
        const ok = ratio <= TARGET
        if (!ok) allOk = false
        rows.push([
          t.label,
          fmt(none / UPLOADS, 2),
          fmt(ruled / UPLOADS, 2),
          fmt(ratio, 3),
          ok ? `met (≤ ${TARGET})` : `MISSED (> ${TARGET})`,
        ])
      } finally {
        await stopChild(w.proc)
      }
    }
  } finally {
    await runCleanups()
  }
  console.log(table(rows))
  process.exitCode = allOk ? 0 : 1
}

main().catch((err) => {
  console.error(err)
  abort(1)
})
