import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import Module from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'

const url = process.env['TEST_DATABASE_URL']

/**
 * The driver asks for a parser for every column of every result. Finding it must not load the
 * driver's module again: a require() resolves the package anew (its package.json, realpath),
 * which cost a delivery of the webhook outbox several KB of garbage and file-system calls.
 */
describe.skipIf(!url)('PostgreSQL result parsing', () => {
  let dataDir: string
  let h: DatabaseHandle
  let admin: pg.Client
  const schema = `t_parsers_${crypto.randomBytes(4).toString('hex')}`

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-parsers-'))
    h = openDatabase({ url, dataDir, schema })
    await h.migrate()
  })

  afterAll(async () => {
    await h?.close()
    await admin.query(`drop schema if exists ${schema} cascade`)
    await admin.end()
    await fs.rm(dataDir, { recursive: true, force: true })
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
