import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'
import { openSqliteReader } from '../src/db/sqlite-reader.js'
import { keysetCsvBlocks } from '../src/exports/keyset-pages.js'

/**
 * The read-only SQLite connection in a worker thread, and the export blocks built on it and on the
 * main connection at once: the same bytes in the same order as one connection alone builds.
 */
describe('SQLite reader in a worker thread', () => {
  let dir: string
  let h: DatabaseHandle
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-reader-'))
    h = openDatabase({ dataDir: dir })
    await sql`create table t (id integer primary key, site_id integer, created_at integer, v text)`.execute(
      h.db,
    )
    const values = Array.from({ length: 1000 }, (_, i) => `(${i + 1}, ${i % 3 === 0 ? 2 : 1}, ${i}, 'v${i}')`)
    await sql.raw(`insert into t values ${values.join(',')}`).execute(h.db)
  })
  afterAll(async () => {
    await h?.close()
    await fs.rm(dir, { recursive: true, force: true })
  })

  it('answers rows as arrays, large blobs included, and reports a bad statement', async () => {
    const reader = await openSqliteReader(path.join(dir, 'wharf.sqlite'))
    try {
      expect(await reader.queryArrays('select id, v from t where id <= ? order by id', [2])).toEqual([
        [1, 'v0'],
        [2, 'v1'],
      ])
      const [[blob]] = (await reader.queryArrays('select zeroblob(200000)', [])) as [[Uint8Array]]
      expect(blob).toBeInstanceOf(Uint8Array)
      expect(blob.byteLength).toBe(200000)
      await expect(reader.queryArrays('select nope from t', [])).rejects.toThrow(
        /SQLite reader: no such column/,
      )
      // It sees only what is committed, and it cannot write.
      await expect(reader.queryArrays('insert into t (id) values (5000) returning id', [])).rejects.toThrow(
        /readonly/,
      )
    } finally {
      await reader.close()
    }
  })

  const blocks = async (handle: DatabaseHandle, pageSize: number) => {
    const out: Buffer[] = []
    let count = 0
    for await (const b of keysetCsvBlocks(handle, {
      table: 'actions',
      db: h.db as any,
      job: { id: 1, site_id: 1, kind: 'history', query: {}, start_at: null, end_at: null },
      pageSize,
      signal: new AbortController().signal,
      select: (qb: any) => qb.select(['id', sql`'x' || v`.as('line')]),
    } as any)) {
      out.push(b.csv)
      count += b.count
    }
    return { csv: Buffer.concat(out).toString(), count }
  }

  it('builds the same CSV in the same order with the worker as without it, and without a worker that fails', async () => {
    // The table the blocks read is `t`, under the name the export code expects.
    await sql`create view actions as select * from t`.execute(h.db)
    let opened = 0
    const withReader: DatabaseHandle = {
      ...h,
      openReader: async () => {
        opened++
        return h.openReader!()
      },
    }
    const alone: DatabaseHandle = { ...h, openReader: undefined }
    const failing: DatabaseHandle = { ...h, openReader: () => Promise.reject(new Error('no thread')) }
    const expected = Array.from({ length: 1000 }, (_, i) => i)
      .filter((i) => i % 3 !== 0)
      .map((i) => `xv${i}\r\n`)
      .join('')
    for (const pageSize of [1, 7, 64, 5000]) {
      const a = await blocks(withReader, pageSize)
      expect(a.count).toBe(666)
      expect(a.csv).toBe(expected)
      expect(await blocks(alone, pageSize)).toEqual(a)
      expect(await blocks(failing, pageSize)).toEqual(a)
    }
    // A second connection only when there is more than one page to read.
    expect(opened).toBe(3)
  })
})
