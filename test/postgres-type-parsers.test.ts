import Module from 'node:module'
import os from 'node:os'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'

const url = process.env['TEST_DATABASE_URL']

/**
 * The driver asks for a parser for every column of every result. Finding it must not load the
 * driver's module again: a require() resolves the package anew (its package.json, realpath),
 * which cost a delivery of the webhook outbox several KB of garbage and file-system calls.
 */
describe.skipIf(!url)('PostgreSQL result parsing', () => {
  let h: DatabaseHandle

  beforeAll(async () => {
    // No tables are read: the results are of expressions.
    h = openDatabase({ url, dataDir: os.tmpdir() })
    // Connecting loads what a socket needs; only what follows is watched.
    await sql`select 1`.execute(h.db)
  })

  afterAll(async () => {
    await h?.close()
  })

  it('finds each column’s parser without loading a module, and reads bigint as a number', async () => {
    const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown }
    const original = loader._load
    const loads: string[] = []
    loader._load = function (this: unknown, request: string, ...rest: unknown[]) {
      loads.push(request)
      return original.call(this, request, ...rest)
    }
    try {
      for (let i = 0; i < 20; i++) {
        const { rows } = await sql<{ n: number; t: string; b: boolean; j: unknown }>`
          select ${i}::bigint as n, 'x'::text as t, true as b, '{"a":1}'::json as j`.execute(h.db)
        expect(rows).toEqual([{ n: i, t: 'x', b: true, j: { a: 1 } }])
      }
      const arrays = await h.queryArrays('select 2::bigint, 3::int', [])
      expect(arrays).toEqual([[2, 3]])
    } finally {
      loader._load = original
    }
    expect(loads).toEqual([])
  })
})
