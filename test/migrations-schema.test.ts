import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../src/db/database.js'

const url = process.env['TEST_DATABASE_URL']
const name = (what: string) => `t_${what}_${crypto.randomBytes(4).toString('hex')}`

/**
 * Migrations on PostgreSQL read only their own schema: no other schema is named while they look
 * for their tables, so one dropped meanwhile (another test run's) cannot fail them with 3F000.
 */
describe.skipIf(!url)('migrations on PostgreSQL', () => {
  let admin: pg.Client
  let dataDir: string
  const created: string[] = []

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-migrations-'))
  })

  afterAll(async () => {
    for (const s of created) await admin.query(`drop schema if exists ${s} cascade`)
    await admin.end()
    await fs.rm(dataDir, { recursive: true, force: true })
  })

  async function migrated(schema: string) {
    created.push(schema)
    const h = openDatabase({ url, dataDir, schema })
    try {
      return { applied: await h.migrate(), tables: await h.db.introspection.getTables() }
    } finally {
      await h.close()
    }
  }

  it('sees only its own schema’s tables, not another schema’s', async () => {
    const other = name('other')
    created.push(other)
    await admin.query(`create schema ${other}`)
    await admin.query(`create table ${other}.users (id integer primary key, stranger text)`)
    const own = name('own')
    const { applied, tables } = await migrated(own)
    expect(applied.length).toBeGreaterThan(0)
    expect(new Set(tables.map((t) => t.schema))).toEqual(new Set([own]))
    const users = tables.find((t) => t.name === 'users')!
    expect(users.columns.map((c) => c.name)).not.toContain('stranger')
    expect(users.columns.find((c) => c.name === 'id')).toMatchObject({ isAutoIncrementing: true })
    expect(tables.map((t) => t.name)).not.toContain('kysely_migration')
  })
})
