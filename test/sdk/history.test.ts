import Files from 'files.com/lib/Files.js'
import Action from 'files.com/lib/models/Action.js'
import History from 'files.com/lib/models/History.js'
import { describe, expect, it } from 'vitest'
import { type NewAction, recordAction } from '../../src/modules/actions/action-recorder.js'
import { dialects, makeKey, makeUser, type TestServer, type TestUser } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`

describe.each(dialects)('files.com SDK: history (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  /** Records actions straight into the history, one second apart, oldest first; returns their ids. */
  async function record(user: TestUser | null, actions: NewAction[]): Promise<number[]> {
    const ctx = {
      siteId: s.container.site.id,
      userId: user?.id ?? null,
      username: user?.username ?? null,
      ip: '198.51.100.4',
      interface: 'restapi',
    }
    const start = Date.now() - 60_000
    const ids: number[] = []
    for (const [i, a] of actions.entries())
      ids.push(await recordAction(s.container.db, ctx, a, start + i * 1000))
    return ids
  }
  const upload = (path: string): NewAction => ({
    action: 'create',
    display: `Uploaded ${path.slice(path.lastIndexOf('/') + 1)}`,
    path,
    targets: [{ type: 'file', id: 1, name: path.slice(path.lastIndexOf('/') + 1) }],
  })
  const ids = (list: Action[]) => list.map((a) => a.id)
  const queryOf = (i = -1) => new URL(rec.requests.at(i)!.url, 'http://x').searchParams

  it('lists a file’s history with History.listForFile, newest first, as Action records', async () => {
    const folder = unique('sdk')
    const user = await makeUser(s)
    const made = await record(user, [
      upload(`${folder}/a.txt`),
      { action: 'read', display: 'Downloaded a.txt', path: `${folder}/a.txt` },
      upload(`${folder}/other.txt`),
    ])
    Files.setApiKey(s.adminKey)
    const list = await History.listForFile(`${folder}/a.txt`)
    expect(list.every((a) => a instanceof Action)).toBe(true)
    expect(ids(list)).toEqual([made[1], made[0]])
    expect(list[1]).toMatchObject({
      path: `${folder}/a.txt`,
      action: 'create',
      display: 'Uploaded a.txt',
      user_id: user.id,
      username: user.username,
      ip: '198.51.100.4',
      interface: 'restapi',
      targets: [{ type: 'file', id: 1, name: 'a.txt' }],
    })
    expect(list[1]!.when).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    expect(rec.requests.at(-1)!.url).toBe(
      `/api/rest/v1/history/files/${folder}%2Fa.txt?path=${folder}%2Fa.txt`,
    )
  })

  it('lists a folder’s history with History.listForFolder, with a display mode', async () => {
    const folder = unique('sdk')
    const made = await record(null, [upload(`${folder}/x/b.txt`), upload(`${folder}-not/c.txt`)])
    Files.setApiKey(s.adminKey)
    const list = await History.listForFolder(folder, { display: 'full' })
    expect(ids(list)).toEqual([made[0]])
    expect(list[0]!.display).toBe(`Uploaded /${folder}/x/b.txt`)
    expect(queryOf().get('display')).toBe('full')
  })

  it('lists a user’s actions with History.listForUser and logins with History.listLogins', async () => {
    const user = await makeUser(s)
    const made = await record(user, [
      upload(`${unique('sdk')}/d.txt`),
      { action: 'login', display: `Logged in as ${user.username}` },
    ])
    Files.setApiKey(s.adminKey)
    expect(ids(await History.listForUser(user.id))).toEqual([made[1], made[0]])
    expect(rec.requests.at(-1)!.url).toBe(`/api/rest/v1/history/users/${user.id}?user_id=${user.id}`)
    const logins = await History.listLogins({ sort_by: { created_at: 'desc' } })
    expect(logins.every((a) => a.action === 'login' || a.action === 'failedlogin')).toBe(true)
    expect(ids(logins)).toContain(made[1])
    expect(ids(logins)).not.toContain(made[0])
  })

  it('lists everything with History.list, following the cursor across pages (auto-pagination)', async () => {
    const user = await makeUser(s)
    const folder = unique('sdk')
    const made = await record(
      user,
      Array.from({ length: 5 }, (_, i) => upload(`${folder}/f${i}.txt`)),
    )
    Files.setApiKey(s.adminKey)
    const list = await History.list({ per_page: 2, filter: { user_id: user.id } })
    expect(ids(list)).toEqual(made.slice().reverse())
    const gets = rec.requests.map((r) => new URL(r.url, 'http://x').searchParams)
    expect(gets).toHaveLength(3)
    expect(gets.map((q) => q.get('page'))).toEqual([null, '2', '3'])
    expect(gets.slice(1).every((q) => (q.get('cursor') ?? '') !== '')).toBe(true)
    expect(gets.every((q) => q.get('filter[user_id]') === String(user.id))).toBe(true)

    const oldestFirst = await History.list({
      per_page: 2,
      filter_like: { path: `${folder}/%` },
      sort_by: { created_at: 'asc' },
    })
    expect(ids(oldestFirst)).toEqual(made)
  })

  it('surfaces refusals as the SDK’s error classes', async () => {
    const user = await makeUser(s)
    Files.setApiKey((await makeKey(s, user.id)).key)
    expect(describeError(await sdkError(History.list()))).toEqual({
      className: 'NotAuthorized_SiteAdminRequiredError',
      type: 'not-authorized/site-admin-required',
      httpCode: 403,
    })
    expect(describeError(await sdkError(History.listForFile('private/a.txt')))).toEqual({
      className: 'NotAuthorized_ReadPermissionRequiredError',
      type: 'not-authorized/read-permission-required',
      httpCode: 403,
    })
    Files.setApiKey(s.adminKey)
    expect(describeError(await sdkError(History.list({ start_at: 'not a date' })))).toEqual({
      className: 'BadRequest_DatetimeParseError',
      type: 'bad-request/datetime-parse',
      httpCode: 400,
    })
  })
})
