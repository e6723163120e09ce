import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Migrator, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../src/db/database.js'
import { migrations } from '../src/db/migrations/index.js'
import { dialects } from './helpers/server.js'

const url = process.env['TEST_DATABASE_URL']

/**
 * The groups migration keeps every folder permission granted before it (ids included), never
 * hands a removed permission's id out again, and then holds a permission to one grantee.
 */
describe.each(dialects)('the groups migration over existing permissions (%s)', (dialect) => {
  let dataDir: string
  const schema = `t_groups_${crypto.randomBytes(4).toString('hex')}`

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-groups-migration-'))
  })
  afterAll(async () => {
    await fs.rm(dataDir, { recursive: true, force: true })
    if (dialect === 'postgres') {
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      await admin.query(`drop schema if exists ${schema} cascade`)
      await admin.end()
    }
  })

  it('keeps rows and ids, and refuses a permission with two grantees or none', async () => {
    const h = openDatabase(dialect === 'postgres' ? { url, dataDir, schema } : { dataDir })
    try {
      const migrator = new Migrator({
        db: h.db,
        provider: { getMigrations: async () => migrations },
        ...(dialect === 'postgres' ? { migrationTableSchema: schema } : {}),
      })
      const before = await migrator.migrateTo('018-behaviors')
      expect(before.error).toBeUndefined()
      const db = h.db as any
      const site = await db
        .insertInto('sites')
        .values({ name: 's', signing_secret: 'x', created_at: 1 })
        .returning('id')
        .executeTakeFirstOrThrow()
      const user = await db
        .insertInto('users')
        .values({ site_id: site.id, username: 'u', username_lower: 'u', created_at: 1, updated_at: 1 })
        .returning('id')
        .executeTakeFirstOrThrow()
      const row = (p: string) => ({
        site_id: site.id,
        user_id: user.id,
        path: p,
        permission: 'full',
        created_at: 1,
      })
      const kept = await db
        .insertInto('permissions')
        .values(row('a'))
        .returning('id')
        .executeTakeFirstOrThrow()
      const removed = await db
        .insertInto('permissions')
        .values(row('b'))
        .returning('id')
        .executeTakeFirstOrThrow()
      await db.deleteFrom('permissions').where('id', '=', removed.id).execute()

      const after = await migrator.migrateToLatest()
      expect(after.error).toBeUndefined()
      expect(
        await db.selectFrom('permissions').select(['id', 'path', 'user_id', 'group_id']).execute(),
      ).toEqual([{ id: kept.id, path: 'a', user_id: user.id, group_id: null }])
      const next = await db
        .insertInto('permissions')
        .values(row('c'))
        .returning('id')
        .executeTakeFirstOrThrow()
      expect(next.id).toBeGreaterThan(removed.id)

      const group = await db
        .insertInto('groups')
        .values({ site_id: site.id, name: 'g', name_lower: 'g', created_at: 1, updated_at: 1 })
        .returning('id')
        .executeTakeFirstOrThrow()
      await expect(
        db
          .insertInto('permissions')
          .values({ ...row('d'), group_id: group.id })
          .execute(),
      ).rejects.toThrow()
      await expect(
        db
          .insertInto('permissions')
          .values({ ...row('d'), user_id: null })
          .execute(),
      ).rejects.toThrow()
      await db
        .insertInto('permissions')
        .values({ ...row('d'), user_id: null, group_id: group.id })
        .execute()
      // Deleting the group takes its permissions with it.
      await db.deleteFrom('groups').where('id', '=', group.id).execute()
      expect(await db.selectFrom('permissions').select('path').orderBy('id').execute()).toEqual([
        { path: 'a' },
        { path: 'c' },
      ])
      if (dialect === 'sqlite') {
        const { rows } = await sql<{ foreign_key_check: unknown }>`pragma foreign_key_check`.execute(h.db)
        expect(rows).toEqual([])
      }

      // And back: the permissions of users stay, with their ids.
      const down = await migrator.migrateTo('018-behaviors')
      expect(down.error).toBeUndefined()
      expect(await db.selectFrom('permissions').select(['id', 'path']).orderBy('id').execute()).toEqual([
        { id: kept.id, path: 'a' },
        { id: next.id, path: 'c' },
      ])
      await expect(
        db
          .insertInto('permissions')
          .values({ ...row('e'), user_id: null })
          .execute(),
      ).rejects.toThrow()
    } finally {
      await h.close()
    }
  })
})
