import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { JobLease } from '../src/jobs/job-lease.js'
import { FileExpiration, retentionActor } from '../src/modules/behaviors/file-expiration.js'
import { FileExpiry } from '../src/modules/files/file-expiry.js'
import { createRepositories } from '../src/modules/repositories.js'
import { findRow, makeFile, makeFolder, pathsUnder } from './helpers/file-rows.js'
import { beginUpload, req, target, uploaded } from './helpers/files.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, expectError, type TestServer, useServer } from './helpers/server.js'

const DAY = 86_400_000

/** Creates a file_expiration behavior through the API. */
async function expiration(
  s: TestServer,
  path: string,
  days: number,
  more: {
    recursive?: boolean
    disable_parent_folder_behavior?: boolean
    delete_empty_folders?: boolean
  } = {},
): Promise<number> {
  const { delete_empty_folders, ...flags } = more
  const r = await call(s, 'POST', '/behaviors', {
    key: s.adminKey,
    body: {
      path,
      behavior: 'file_expiration',
      value: {
        days_to_retain: days,
        ...(delete_empty_folders === undefined ? {} : { delete_empty_folders }),
      },
      ...flags,
    },
  })
  expect(r.status, r.text).toBe(201)
  return r.body.id
}

/** The `destroy` Actions of the retention, by path. */
async function retentionDeletes(s: TestServer, under: string) {
  const rows = await s.container.db
    .selectFrom('actions')
    .selectAll()
    .where('action', '=', 'destroy')
    .where('username', '=', 'Wharf')
    .execute()
  return rows.filter((r) => r.path === under || r.path.startsWith(`${under}/`))
}

describe.each(dialects)('file_expiration behaviors (%s)', (dialect) => {
  let clock = Date.now()
  let listener: TestListener
  beforeAll(async () => {
    listener = await startListener(() => 200)
  })
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' }, { now: () => clock })

  /** A file stored `days` days ago (by the test's clock), with bytes in the blob store. */
  const aged = (path: string, days: number) =>
    makeFile(s, path, `bytes of ${path}`, { mtime: clock - days * DAY })
  const agedFolder = async (path: string, days: number) => {
    const row = await makeFolder(s, path)
    await s.container.db
      .updateTable('files')
      .set({ mtime: clock - days * DAY })
      .where('id', '=', row.id)
      .execute()
  }
  const exists = async (path: string) => (await findRow(s, path)) !== undefined
  /** The file core's retention deletion, as another process has it. */
  const expiryOf = () => {
    const repos = createRepositories(s.container.db, s.container.database.dialect)
    return { repos, expiry: new FileExpiry({ files: repos.files, folders: repos.folders }, retentionActor) }
  }

  it('validates the value with model-save-error naming each field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'value.days_to_retain'],
      [{ days_to_retain: 0 }, 'value.days_to_retain'],
      [{ days_to_retain: 1.5 }, 'value.days_to_retain'],
      [{ days_to_retain: '30' }, 'value.days_to_retain'],
      [{ days_to_retain: 36_501 }, 'value.days_to_retain'],
      [{ days_to_retain: 30, delete_empty_folders: 'yes' }, 'value.delete_empty_folders'],
      [{ days_to_retain: 30, days: 30 }, 'value.days'],
    ]
    for (const [value, field] of cases) {
      const r = await call(s, 'POST', '/behaviors', {
        key: s.adminKey,
        body: { path: 'validation', behavior: 'file_expiration', value },
      })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors), JSON.stringify(value)).toEqual([field])
    }
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'validation', behavior: 'file_expiration', value: JSON.stringify({ days_to_retain: 7 }) },
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body.value).toEqual({ days_to_retain: 7, delete_empty_folders: false })
    expect((await call(s, 'DELETE', `/behaviors/${r.body.id}`, { key: s.adminKey })).status).toBe(204)
  })

  it('deletes files stored longer ago than days_to_retain, as a robot named Wharf, with Delete webhooks and the bytes gone', async () => {
    const hook = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: listener.url, triggers: ['Delete'], enabled: true },
    })
    expect(hook.status, hook.text).toBe(200)
    await expiration(s, 'archive', 30, { recursive: true })
    const old = await aged('archive/old.csv', 31)
    const deep = await aged('archive/2020/jan/deep.csv', 45)
    await aged('archive/young.csv', 29)
    await aged('elsewhere/old.csv', 400)
    // Stored 40 days ago, replaced today: the replacement is what counts, not the first upload.
    await aged('archive/replaced.csv', 40)
    await uploaded(s, 'archive/replaced.csv', 'new bytes')
    // The client's own modification time says nothing of when the file was stored.
    await aged('archive/client-mtime.csv', 1)
    await s.container.db
      .updateTable('files')
      .set({ provided_mtime: clock - 999 * DAY })
      .where('path', '=', 'archive/client-mtime.csv')
      .execute()

    const report = await s.container.fileExpiration.runOnce()
    expect(report).toEqual({ files: 2, folders: 0 })
    expect(await pathsUnder(s, 'archive')).toEqual([
      'archive',
      'archive/2020',
      'archive/2020/jan',
      'archive/client-mtime.csv',
      'archive/replaced.csv',
      'archive/young.csv',
    ])
    expect(await exists('elsewhere/old.csv')).toBe(true)

    const actions = await retentionDeletes(s, 'archive')
    expect(actions.map((a) => a.path).sort()).toEqual(['archive/2020/jan/deep.csv', 'archive/old.csv'])
    for (const a of actions) {
      expect(a).toMatchObject({
        user_id: null,
        username: 'Wharf',
        interface: 'robot',
        display: `Deleted ${a.path.split('/').pop()}`,
      })
    }
    // The history shows them as any deletion.
    const history = await call(s, 'GET', '/history/folders/archive', { key: s.adminKey })
    expect(history.status).toBe(200)
    expect(history.body.filter((h: any) => h.action === 'destroy' && h.username === 'Wharf').length).toBe(2)

    const delivered = await listener.waitFor(2, 10_000)
    expect(
      delivered.map((d) => [d.json.operation, d.json.path, d.json.username, d.json.protocol]).sort(),
    ).toEqual([
      ['Delete', 'archive/2020/jan/deep.csv', 'Wharf', 'robot'],
      ['Delete', 'archive/old.csv', 'Wharf', 'robot'],
    ])
    const outbox = await s.container.db
      .selectFrom('webhook_notifications')
      .selectAll()
      .where('operation', '=', 'Delete')
      .execute()
    expect(outbox.map((n) => [n.path, n.username, n.protocol]).sort()).toEqual([
      ['archive/2020/jan/deep.csv', 'Wharf', 'robot'],
      ['archive/old.csv', 'Wharf', 'robot'],
    ])
    await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { enabled: false } })

    // The bytes go with the janitor's next run past its grace period, as for any deletion.
    expect(await s.container.blobs.size(old.blob_key!)).not.toBeNull()
    clock += 2 * 3600_000
    await s.container.janitor.runOnce()
    expect(await s.container.blobs.size(old.blob_key!)).toBeNull()
    expect(await s.container.blobs.size(deep.blob_key!)).toBeNull()

    // A second pass finds nothing more.
    expect(await s.container.fileExpiration.runOnce()).toEqual({ files: 0, folders: 0 })
  })

  it('without recursive, only the files directly in the folder', async () => {
    await expiration(s, 'flat', 10)
    await aged('flat/old.txt', 11)
    await aged('flat/sub/old.txt', 11)
    await s.container.fileExpiration.runOnce()
    expect(await exists('flat/old.txt')).toBe(false)
    expect(await exists('flat/sub/old.txt')).toBe(true)
  })

  it('follows inheritance and cancellation three levels deep, as ancestor_behaviors lists them', async () => {
    // tree: 10 days, for everything below; tree/a cancels it with 100 days below it; tree/a/b
    // cancels that with 5 days; tree/a/b/n (not recursive) adds 1 day for its own files only.
    await expiration(s, 'tree', 10, { recursive: true })
    await expiration(s, 'tree/a', 100, { recursive: true, disable_parent_folder_behavior: true })
    await expiration(s, 'tree/a/b', 5, { recursive: true, disable_parent_folder_behavior: true })
    await expiration(s, 'tree/a/b/n', 1)
    const cases: [string, number, boolean][] = [
      ['tree/t.txt', 11, false],
      ['tree/t-young.txt', 9, true],
      ['tree/other/deep/t.txt', 11, false],
      ['tree/a/a.txt', 20, true],
      ['tree/a/a-old.txt', 101, false],
      ['tree/a/x/a.txt', 20, true],
      ['tree/a/b/b.txt', 6, false],
      ['tree/a/b/b-young.txt', 4, true],
      ['tree/a/b/c/d/b.txt', 6, false],
      ['tree/a/b/n/n.txt', 2, false],
      ['tree/a/b/n/n-young.txt', 0.5, true],
      ['tree/a/b/n/deeper/n.txt', 2, true],
    ]
    for (const [path, days] of cases) await aged(path, days)
    await s.container.fileExpiration.runOnce()
    for (const [path, , kept] of cases) expect(await exists(path), path).toBe(kept)
    // What the API says applies is what the retention did.
    const applying = async (folder: string) => {
      const r = await call(s, 'GET', `/behaviors/folders/${folder}?ancestor_behaviors=true`, {
        key: s.adminKey,
      })
      return r.body.map((b: any) => `${b.path}:${b.value.days_to_retain}`)
    }
    expect(await applying('tree/a/x')).toEqual(['tree/a:100'])
    expect(await applying('tree/a/b/n')).toEqual(['tree/a/b:5', 'tree/a/b/n:1'])
    expect(await applying('tree/a/b/n/deeper')).toEqual(['tree/a/b:5'])
  })

  it('with delete_empty_folders, removes empty folders made that long ago, never the behavior’s own nor one being uploaded into', async () => {
    await expiration(s, 'drop', 30, { recursive: true, delete_empty_folders: true })
    await agedFolder('drop', 90)
    await aged('drop/a/b/f.txt', 40)
    await agedFolder('drop/a', 60)
    await agedFolder('drop/a/b', 60)
    await agedFolder('drop/empty-old', 60)
    await makeFolder(s, 'drop/empty-new')
    await agedFolder('drop/busy', 60)
    const { ref } = await beginUpload(target(s), 'drop/busy/f.txt')
    expect(ref).toBeTruthy()

    const report = await s.container.fileExpiration.runOnce()
    expect(report).toEqual({ files: 1, folders: 3 })
    expect(await pathsUnder(s, 'drop')).toEqual(['drop', 'drop/busy', 'drop/empty-new'])
    const folders = (await retentionDeletes(s, 'drop')).filter(
      (a) => JSON.parse(a.targets)[0].type === 'folder',
    )
    expect(folders.map((a) => a.path).sort()).toEqual(['drop/a', 'drop/a/b', 'drop/empty-old'])
    expect(folders[0]!.display).toMatch(/^Deleted folder /)
    // Without it, empty folders stay.
    await expiration(s, 'keep', 30, { recursive: true })
    await agedFolder('keep/empty', 60)
    await s.container.fileExpiration.runOnce()
    expect(await exists('keep/empty')).toBe(true)
  })

  it('works once however many processes run it: they take turns', async () => {
    await expiration(s, 'shared', 3, { recursive: true })
    for (let i = 0; i < 40; i++) await aged(`shared/f${i}.txt`, 4)
    const other = () =>
      new FileExpiration(
        expiryOf().repos.behaviors,
        expiryOf().expiry,
        new JobLease(s.container.db, 'file-expiration', { leaseMs: 60_000, now: () => clock }),
        { batchSize: 3, now: () => clock },
      )
    const reports = await Promise.all([
      other().runOnce(),
      other().runOnce(),
      s.container.fileExpiration.runOnce(),
    ])
    expect(reports.reduce((n, r) => n + r.files, 0)).toBe(40)
    expect(await retentionDeletes(s, 'shared')).toHaveLength(40)
    expect(await pathsUnder(s, 'shared')).toEqual(['shared'])
  })

  it('loses and doubles nothing when a batch fails midway: it is all undone, and the next pass does it once', async () => {
    await expiration(s, 'crash', 3, { recursive: true })
    const rows = []
    for (let i = 0; i < 9; i++) rows.push(await aged(`crash/f${i}.txt`, 4))
    // The Action of one file of the second batch cannot be written, as if the process died there.
    const db = s.container.db
    if (dialect === 'postgres') {
      await sql`create function refuse_crash() returns trigger language plpgsql as $$
        begin raise exception 'boom'; end $$`.execute(db)
      await sql`create trigger refuse_crash before insert on actions for each row
        when (new.path = 'crash/f4.txt') execute function refuse_crash()`.execute(db)
    } else {
      await sql`create trigger refuse_crash before insert on actions
        when new.path = 'crash/f4.txt' begin select raise(abort, 'boom'); end`.execute(db)
    }
    const pass = () =>
      new FileExpiration(expiryOf().repos.behaviors, expiryOf().expiry, null, {
        batchSize: 3,
        now: () => clock,
      })
    const inOrder = async () =>
      (
        await expiryOf().expiry.expiredFiles(
          {
            siteId: s.container.site.id,
            folderLower: 'crash',
            recursive: true,
            excluded: [],
            cutoff: clock - 3 * DAY,
          },
          100,
        )
      ).length
    expect(await inOrder()).toBe(9)
    await expect(pass().runOnce()).rejects.toThrow(/boom/)
    const failedBatchLeft = await pathsUnder(s, 'crash')
    const deletedFirst = await retentionDeletes(s, 'crash')
    // Whatever committed before the failure is whole (files gone with their Actions and queued
    // bytes); the failed batch left its files, with no Action and nothing queued.
    expect(failedBatchLeft.length - 1 + deletedFirst.length).toBe(9)
    expect(failedBatchLeft).toContain('crash/f4.txt')
    const queued = new Set(
      (await db.selectFrom('blob_garbage').select('blob_key').execute()).map((r) => r.blob_key),
    )
    for (const r of rows) {
      const gone = !failedBatchLeft.includes(r.path)
      expect(queued.has(r.blob_key!), r.path).toBe(gone)
    }
    await sql`drop trigger refuse_crash${sql.raw(dialect === 'postgres' ? ' on actions' : '')}`.execute(db)
    await pass().runOnce()
    expect(await pathsUnder(s, 'crash')).toEqual(['crash'])
    const all = await retentionDeletes(s, 'crash')
    expect(all.map((a) => a.path).sort()).toEqual(rows.map((r) => r.path).sort())
  })

  it('keeps a file replaced or moved away while a pass reads it', async () => {
    await expiration(s, 'race', 3, { recursive: true })
    await aged('race/replaced.txt', 4)
    await aged('race/moved.txt', 4)
    const { expiry } = expiryOf()
    const scope = {
      siteId: s.container.site.id,
      folderLower: 'race',
      recursive: true,
      excluded: [],
      cutoff: clock - 3 * DAY,
    }
    const read = await expiry.expiredFiles(scope, 10)
    expect(read.map((r) => r.path).sort()).toEqual(['race/moved.txt', 'race/replaced.txt'])
    // Between the read and the deletion: one is replaced, the other moved out of the folder.
    await uploaded(s, 'race/replaced.txt', 'fresh')
    const moved = await req(target(s), 'POST', '/file_actions/move/race/moved.txt', {
      destination: 'safe/moved.txt',
    })
    expect(moved.status, moved.text).toBe(201)
    expect(await expiry.deleteFiles(scope, read, clock)).toBe(0)
    expect(await exists('race/replaced.txt')).toBe(true)
    expect(await exists('safe/moved.txt')).toBe(true)
  })
})
