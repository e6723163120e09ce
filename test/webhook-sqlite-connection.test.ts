import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../src/db/database.js'

/**
 * The dispatcher's claims and delivery log run on the SQLite connection itself (RawSqlite), next
 * to Kysely on that same connection. Their statements must never land inside a transaction of
 * Kysely's, which could roll them back after the dispatcher took them as committed.
 */
describe('the SQLite connection under Kysely (RawSqlite)', () => {
  let dir: string
  let database: DatabaseHandle
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-raw-sqlite-'))
    database = openDatabase({ dataDir: dir })
    await sql`create table notes (id integer primary key, text text not null)`.execute(database.db)
  })
  afterAll(async () => {
    await database?.close()
    await fs.rm(dir, { recursive: true, force: true })
  })

  const notes = async () =>
    (await sql<{ text: string }>`select text from notes order by id`.execute(database.db)).rows.map(
      (r) => r.text,
    )

  it('waits for a Kysely transaction to end, and its statements outlive that one rolling back', async () => {
    const raw = database.sqlite!
    let ranInside: boolean | null = null
    let release!: () => void
    const released = new Promise<void>((r) => {
      release = r
    })
    const insideTransaction = database.db.transaction().execute(async (trx) => {
      await sql`insert into notes (text) values ('rolled back')`.execute(trx)
      await released
      throw new Error('the change failed')
    })
    insideTransaction.catch(() => {})
    // Started while the transaction is open: it must not run until the transaction is over.
    const held = raw.hold((db) => {
      ranInside = db.inTransaction
      raw.transaction(() => raw.statement("insert into notes (text) values ('kept')").run())
    })
    await new Promise((r) => setTimeout(r, 50))
    expect(ranInside).toBeNull()
    release()
    await expect(insideTransaction).rejects.toThrow('the change failed')
    await held
    expect(ranInside).toBe(false)
    expect(await notes()).toEqual(['kept'])
  })

  it('rolls back the whole transaction when its work throws, and the connection stays usable', async () => {
    const raw = database.sqlite!
    await expect(
      raw.hold(() =>
        raw.transaction(() => {
          raw.statement("insert into notes (text) values ('half')").run()
          throw new Error('stopped halfway')
        }),
      ),
    ).rejects.toThrow('stopped halfway')
    expect(await notes()).toEqual(['kept'])
    await database.db
      .transaction()
      .execute((trx) => sql`insert into notes (text) values ('after')`.execute(trx))
    expect(await notes()).toEqual(['kept', 'after'])
  })
})
