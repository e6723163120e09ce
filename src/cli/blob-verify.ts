import { sql } from 'kysely'
import type { BlobStore } from '../blobs/blob-store.js'
import type { DatabaseHandle } from '../db/database.js'

export interface VerifyOptions {
  /** Sizes only: no blob is read (fast); without it every blob is read and its MD5 compared. */
  quick?: boolean
  /** Delete the orphans found (blobs nothing refers to), each checked again just before. */
  repair?: boolean
  /** Called for each problem as it is found (the command prints it). */
  onProblem?: (problem: VerifyProblem) => void
}

export type VerifyProblem =
  | { kind: 'missing'; key: string; path: string }
  | { kind: 'size'; key: string; path: string; expected: number; found: number }
  | { kind: 'md5'; key: string; path: string; expected: string; found: string }
  | { kind: 'orphan'; key: string; removed: boolean }

export interface VerifyReport {
  /** Files whose blob was checked. */
  files: number
  /** Export files whose blob was checked. */
  exports: number
  /** Blobs in the store. */
  blobs: number
  missing: number
  mismatched: number
  orphans: number
  removed: number
  /** True when every blob is there and right, and no orphan is left. */
  ok: boolean
}

const PAGE = 1000

/**
 * `wharf verify`: every file's blob is in the store with its recorded size (and, unless quick, its
 * recorded MD5), every export's file too, and the store holds nothing else (orphans). Changes
 * nothing, unless `repair` deletes the orphans. Safe while the site runs: the store is listed
 * before the database is read, so a blob written meanwhile is already queued or referred to (the
 * deletion queue names a blob before its bytes are written), and an orphan is checked again
 * against the database just before it is deleted.
 */
export async function verifyBlobs(
  database: DatabaseHandle,
  store: BlobStore,
  opts: VerifyOptions = {},
): Promise<VerifyReport> {
  const { db } = database
  const report = (p: VerifyProblem) => opts.onProblem?.(p)
  const inStore = new Set<string>()
  for await (const key of store.keys()) inStore.add(key)
  const referred = new Set<string>()
  let missing = 0
  let mismatched = 0

  const check = async (key: string, where: string, size: number, md5: string | null) => {
    referred.add(key)
    const found = await store.size(key)
    if (found === null) {
      missing++
      report({ kind: 'missing', key, path: where })
      return
    }
    if (found !== size) {
      mismatched++
      report({ kind: 'size', key, path: where, expected: size, found })
      return
    }
    if (opts.quick || md5 === null) return
    const sums = await store.checksums(key)
    if (sums.md5 !== md5) {
      mismatched++
      report({ kind: 'md5', key, path: where, expected: md5, found: sums.md5 })
    }
  }

  let files = 0
  for (let after = 0; ; ) {
    const rows = await db
      .selectFrom('files')
      .select(['id', 'path', 'size', 'blob_key', 'md5'])
      .where('blob_key', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute()
    for (const r of rows) {
      files++
      await check(r.blob_key as string, r.path, r.size, r.md5)
    }
    if (rows.length < PAGE) break
    after = rows[rows.length - 1]?.id ?? after
  }
  let exportsChecked = 0
  for (const r of await db
    .selectFrom('exports')
    .select(['id', 'blob_key', 'result_bytes'])
    .where('blob_key', 'is not', null)
    .orderBy('id')
    .execute()) {
    exportsChecked++
    await check(r.blob_key as string, `export ${r.id}`, r.result_bytes ?? 0, null)
  }
  const queued = new Set(
    (await db.selectFrom('blob_garbage').select('blob_key').execute()).map((r) => r.blob_key),
  )

  let orphans = 0
  let removed = 0
  for (const key of inStore) {
    if (referred.has(key) || queued.has(key)) continue
    orphans++
    let gone = false
    if (opts.repair && !(await stillUsed(database, key))) {
      await store.delete(key)
      removed++
      gone = true
    }
    report({ kind: 'orphan', key, removed: gone })
  }
  return {
    files,
    exports: exportsChecked,
    blobs: inStore.size,
    missing,
    mismatched,
    orphans,
    removed,
    ok: missing === 0 && mismatched === 0 && orphans === removed,
  }
}

/** Whether anything names the blob now (a file, an export, the deletion queue). */
async function stillUsed({ db }: DatabaseHandle, key: string): Promise<boolean> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .or([
          eb.exists(eb.selectFrom('files').select(sql`1`.as('x')).where('blob_key', '=', key)),
          eb.exists(eb.selectFrom('exports').select(sql`1`.as('x')).where('blob_key', '=', key)),
          eb.exists(eb.selectFrom('blob_garbage').select(sql`1`.as('x')).where('blob_key', '=', key)),
        ])
        .as('used'),
    ])
    .executeTakeFirstOrThrow()
  return Boolean(Number(row.used))
}
