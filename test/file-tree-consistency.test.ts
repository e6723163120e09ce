import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { endUpload, req, stageUpload, type Target, upload } from './helpers/files.js'
import { dialects, useServer } from './helpers/server.js'

/**
 * Changes inside a folder racing the deletion or move of that folder: whatever order they land
 * in, every file and folder still has its parent folder. (On PostgreSQL this holds only because
 * writers lock the folders above their paths; SQLite runs one write at a time.)
 */
describe.each(dialects)('file tree consistency under concurrent changes (%s)', (dialect) => {
  let t: Target

  const s = useServer(dialect)
  beforeAll(async () => {
    t = { api: s.api, key: s.adminKey }
  })

  /** Rows whose parent folder does not exist: there must never be any. */
  const orphans = async () => {
    const rows = await sql<{ path: string }>`
      select f.path from files f
      where f.parent_lower <> ''
        and not exists (
          select 1 from files p
          where p.site_id = f.site_id and p.path_lower = f.parent_lower and p.type = 'directory'
        )`.execute(s.container.db)
    return rows.rows.map((r) => r.path)
  }

  it('never leaves a file without its folder when an upload ends during a recursive delete', async () => {
    for (let i = 0; i < 12; i++) {
      const folder = `race${i}`
      await upload(t, `${folder}/seed.txt`, 'seed')
      const ref = await stageUpload(t, `${folder}/deep/new.txt`, Buffer.from('new'))
      const [ended, deleted] = await Promise.all([
        endUpload(t, `${folder}/deep/new.txt`, ref),
        req(t, 'DELETE', `/files/${folder}?recursive=true`),
      ])
      expect(ended.status, ended.text).toBe(201)
      expect(deleted.status, deleted.text).toBe(204)
    }
    expect(await orphans()).toEqual([])
  })

  it('never leaves a file without its folder when an upload ends during a move of its folder', async () => {
    for (let i = 0; i < 12; i++) {
      const folder = `moving${i}`
      await upload(t, `${folder}/seed.txt`, 'seed')
      const ref = await stageUpload(t, `${folder}/new.txt`, Buffer.from('new'))
      const [ended, moved] = await Promise.all([
        endUpload(t, `${folder}/new.txt`, ref),
        req(t, 'POST', `/file_actions/move/${folder}`, { destination: `moved${i}` }),
      ])
      expect(ended.status, ended.text).toBe(201)
      expect(moved.status, moved.text).toBe(201)
    }
    expect(await orphans()).toEqual([])
  })
})
