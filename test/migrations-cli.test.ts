import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { DatabaseNewerError, openDatabase } from '../src/db/database.js'
import { migrations } from '../src/db/migrations/index.js'
import { dialects } from './helpers/server.js'
import { builtServer } from './helpers/server-process.js'

const run = promisify(execFile)
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.()
})

const ALL = Object.keys(migrations)

describe.each(dialects)('migrations (%s)', (dialect) => {
  async function database() {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-migrate-'))
    cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
    const schema = dialect === 'postgres' ? `t_${crypto.randomBytes(6).toString('hex')}` : undefined
    if (schema) {
      const c = new pg.Client({ connectionString: process.env['TEST_DATABASE_URL'] })
      await c.connect()
      await c.query(`create schema ${schema}`)
      await c.end()
      cleanups.push(async () => {
        const d = new pg.Client({ connectionString: process.env['TEST_DATABASE_URL'] })
        await d.connect()
        await d.query(`drop schema if exists ${schema} cascade`)
        await d.end()
      })
    }
    const db = openDatabase({
      url: dialect === 'postgres' ? process.env['TEST_DATABASE_URL'] : undefined,
      dataDir,
      schema,
    })
    cleanups.push(() => db.close())
    return db
  }

  it('lists what would run without applying it, then nothing once applied', async () => {
    const db = await database()
    expect(await db.pendingMigrations()).toEqual(ALL)
    expect(await db.pendingMigrations()).toEqual(ALL)
    expect(await db.migrate()).toEqual(ALL)
    expect(await db.pendingMigrations()).toEqual([])
  })

  it('refuses a database a newer Wharf migrated, naming its migrations, and changes nothing', async () => {
    const db = await database()
    await db.migrate()
    await sql`insert into kysely_migration (name, timestamp) values ('999-from-the-future', '2030-01-01T00:00:00.000Z')`.execute(
      db.db,
    )
    const refusal = await db.migrate().catch((e: unknown) => e)
    expect(refusal).toBeInstanceOf(DatabaseNewerError)
    expect((refusal as Error).message).toBe(
      'The database was upgraded by a newer version of Wharf: it has migration 999-from-the-future, which this version does not know. Run that newer version, or restore a backup taken before the upgrade.',
    )
    await expect(db.pendingMigrations()).rejects.toBeInstanceOf(DatabaseNewerError)
  })
})

describe('wharf migrate and serve on a database newer than the code', () => {
  it('says what a dry run would apply, and a start on a newer database stops with the reason', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-migrate-cli-'))
    cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
    const { BASE_URL: _, ...inherited } = process.env
    const env = { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0' }
    const cli = builtServer()
    const dry = await run(process.execPath, [cli, 'migrate', '--dry-run'], { env })
    expect(dry.stdout).toBe(`would apply: ${ALL.join(', ')}\n`)
    expect((await run(process.execPath, [cli, 'migrate'], { env })).stdout).toBe(
      `applied: ${ALL.join(', ')}\n`,
    )
    expect((await run(process.execPath, [cli, 'migrate', '--dry-run'], { env })).stdout).toBe(
      'database is up to date\n',
    )

    const db = openDatabase({ dataDir })
    await sql`insert into kysely_migration (name, timestamp) values ('999-from-the-future', '2030-01-01T00:00:00.000Z')`.execute(
      db.db,
    )
    await db.close()
    for (const args of [['serve'], ['migrate']]) {
      const failed = await run(process.execPath, [cli, ...args], { env, timeout: 30_000 }).catch((e) => e)
      expect(failed.code, args.join(' ')).toBe(1)
      expect(failed.stderr).toBe(
        'The database was upgraded by a newer version of Wharf: it has migration 999-from-the-future, which this version does not know. Run that newer version, or restore a backup taken before the upgrade.\n',
      )
    }
  })
})
