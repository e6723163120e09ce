import { beforeAll, describe, expect, it } from 'vitest'
import { findRow, makeFile, makeFolder } from './helpers/file-rows.js'
import { target, uploadRefusal } from './helpers/files.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'

/** lock_subfolders: who may create or delete folders at the locked depth. */
describe.each(dialects)('lock_subfolders (%s)', (dialect) => {
  const s = useServer(dialect)
  /** Full permission on everything below `locks`. */
  let userKey: string
  /** Admin of `locks/admined`. */
  let folderAdminKey: string

  const rule = async (path: string, value: unknown, more: Record<string, unknown> = {}) => {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path, behavior: 'lock_subfolders', value, ...more },
    })
    expect(r.status, r.text).toBe(201)
  }
  const mkdir = (path: string, key = userKey, body: Record<string, unknown> = {}) =>
    call(s, 'POST', `/folders/${path}`, { key, body })
  const del = (path: string, key = userKey) => call(s, 'DELETE', `/files/${path}?recursive=true`, { key })

  beforeAll(async () => {
    const u = await makeUser(s, { username: 'member' })
    await grant(s, u.id, 'locks', 'full')
    userKey = (await makeKey(s, u.id)).key
    const a = await makeUser(s, { username: 'sub-admin' })
    await grant(s, a.id, 'locks/admined', 'admin')
    folderAdminKey = (await makeKey(s, a.id)).key
  })

  it('validates level with model-save-error naming the field', async () => {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'v', behavior: 'lock_subfolders', value: { level: 'grandchildren' } },
    })
    expectError(r, 422, 'processing-failure/model-save-error')
    expect(Object.keys(r.body.model_errors)).toEqual(['value.level'])
    expect(r.body.model_errors['value.level'][0]).toContain('children, children_recursive')
    const d = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'v', behavior: 'lock_subfolders', value: {} },
    })
    expect(d.body.value).toEqual({ level: 'children' })
  })

  it('children: the folder’s own subfolders are fixed for its users; files and deeper levels are not', async () => {
    await makeFolder(s, 'locks/a/kept')
    await rule('locks/a', { level: 'children' })
    const made = await mkdir('locks/a/new')
    expectError(made, 422, 'processing-failure/folder-locked')
    expect(made.body.error).toContain('locks/a is locked')
    expect(await findRow(s, 'locks/a/new')).toBeUndefined()
    expectError(await del('locks/a/kept'), 422, 'processing-failure/folder-locked')
    expect(await findRow(s, 'locks/a/kept')).toBeDefined()
    // An upload that would create a folder there, before any byte.
    expectError(
      await uploadRefusal(target(s, userKey), 'locks/a/made/x.txt', 'x'),
      422,
      'processing-failure/folder-locked',
    )
    expectError(
      await mkdir('locks/a/p/q', userKey, { mkdir_parents: true }),
      422,
      'processing-failure/folder-locked',
    )
    // Moves and copies of folders in and out, renames included.
    await makeFolder(s, 'locks/elsewhere')
    const move = (from: string, to: string) =>
      call(s, 'POST', `/file_actions/move/${from}`, { key: userKey, body: { destination: to } })
    expectError(await move('locks/elsewhere', 'locks/a/elsewhere'), 422, 'processing-failure/folder-locked')
    expectError(await move('locks/a/kept', 'locks/kept'), 422, 'processing-failure/folder-locked')
    expectError(await move('locks/a/kept', 'locks/a/renamed'), 422, 'processing-failure/folder-locked')
    expectError(
      await call(s, 'POST', '/file_actions/copy/locks/elsewhere', {
        key: userKey,
        body: { destination: 'locks/a/copy' },
      }),
      422,
      'processing-failure/folder-locked',
    )
    // Files come and go; a folder one level further down is not locked by `children`.
    await makeFile(s, 'locks/a/f.txt', 'x')
    expect((await move('locks/a/f.txt', 'locks/a/g.txt')).status).toBe(201)
    expect((await mkdir('locks/a/kept/deeper')).status).toBe(201)
    expect((await del('locks/a/kept/deeper')).status).toBe(204)
    // A site admin still may.
    expect((await mkdir('locks/a/by-admin', s.adminKey)).status).toBe(201)
    expect((await del('locks/a/by-admin', s.adminKey)).status).toBe(204)
  })

  it('children_recursive locks every level below; a folder admin of the locked folder still may', async () => {
    await makeFolder(s, 'locks/admined/x')
    await rule('locks/admined', { level: 'children_recursive' })
    expectError(await mkdir('locks/admined/x/y'), 422, 'processing-failure/subfolder-locked')
    expectError(await mkdir('locks/admined/y'), 422, 'processing-failure/folder-locked')
    expect((await mkdir('locks/admined/x/y', folderAdminKey)).status).toBe(201)
    expect((await del('locks/admined/x/y', folderAdminKey)).status).toBe(204)
    expectError(await del('locks/admined/x'), 422, 'processing-failure/folder-locked')
  })

  it('inheritance and cancellation three levels deep', async () => {
    await makeFolder(s, 'locks/deep/b/c/d')
    await rule('locks/deep', { level: 'children_recursive' })
    expectError(await mkdir('locks/deep/b/c/d/e'), 422, 'processing-failure/subfolder-locked')
    // A lock lower down that cancels those above: only its own children stay locked.
    await rule('locks/deep/b/c', { level: 'children' }, { disable_parent_folder_behavior: true })
    expect((await mkdir('locks/deep/b/c/d/e')).status).toBe(201)
    expectError(await mkdir('locks/deep/b/c/e'), 422, 'processing-failure/folder-locked')
    // Above the cancelling one, the recursive lock still holds.
    expectError(await mkdir('locks/deep/b/z'), 422, 'processing-failure/subfolder-locked')
  })
})
