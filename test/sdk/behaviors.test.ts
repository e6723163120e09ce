import Files from 'files.com/lib/Files.js'
import Behavior from 'files.com/lib/models/Behavior.js'
import File from 'files.com/lib/models/File.js'
import Folder from 'files.com/lib/models/Folder.js'
import User from 'files.com/lib/models/User.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRow } from '../helpers/file-rows.js'
import { uploaded } from '../helpers/files.js'
import { startListener, type TestListener } from '../helpers/listener.js'
import { dialects, grant, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: folder behaviors (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  it('creates with Behavior.create (value as JSON text), finds, lists, updates and deletes', async () => {
    Files.setApiKey(s.adminKey)
    const created = await Behavior.create({
      path: 'sdk/in',
      behavior: 'limit_file_extensions',
      value: JSON.stringify({ extensions: ['csv'], mode: 'allow' }),
      name: 'CSV only',
      description: 'the partner sends CSV',
      recursive: true,
      disable_parent_folder_behavior: false,
    })
    expect(created).toBeInstanceOf(Behavior)
    expect(created.id).toEqual(expect.any(Number))
    expect(created.getPath()).toBe('sdk/in')
    expect(created.getBehavior()).toBe('limit_file_extensions')
    expect(created.getValue()).toEqual({ extensions: ['csv'], mode: 'allow' })
    expect(created.getRecursive()).toBe(true)

    const found = await Behavior.find(created.id)
    expect(found.attributes).toEqual(created.attributes)

    await Behavior.create({
      path: 'sdk/in/deeper',
      behavior: 'limit_filename_length',
      value: '{"max_length": 40}',
    })
    const listed = await Behavior.list({ filter: { behavior: 'limit_file_extensions' } })
    expect(listed.map((b) => b.id)).toEqual([created.id])
    expect(rec.requests.at(-1)!.url).toContain('filter%5Bbehavior%5D=limit_file_extensions')

    const own = await Behavior.listFor('sdk/in/deeper')
    expect(own.map((b) => b.behavior)).toEqual(['limit_filename_length'])
    const applying = await Behavior.listFor('sdk/in/deeper', { ancestor_behaviors: true })
    expect(applying.map((b) => b.behavior).sort()).toEqual(['limit_file_extensions', 'limit_filename_length'])

    const updated = await found.update({
      value: JSON.stringify({ extensions: ['csv', 'txt'] }),
      name: 'CSV or text',
    })
    expect(updated.value).toEqual({ extensions: ['csv', 'txt'], mode: 'allow' })
    expect(updated.name).toBe('CSV or text')

    await found.delete()
    const gone = await sdkError(Behavior.find(created.id))
    expect(describeError(gone)).toMatchObject({ type: 'not-found', httpCode: 404 })
  })

  it('renames uploads, locks subfolders and makes user folders, as the SDK sees them', async () => {
    Files.setApiKey(s.adminKey)
    await Behavior.create({
      path: 'sdk-named',
      behavior: 'override_upload_filename',
      value: JSON.stringify({ filename_override_pattern: 'in-{name}' }),
    })
    const file = await File.uploadData('sdk-named/a.txt', 'hello')
    expect(file.path).toBe('sdk-named/in-a.txt')

    await Behavior.create({ path: 'sdk-locked', behavior: 'lock_subfolders', value: '{"level":"children"}' })
    const u = await makeUser(s)
    await grant(s, u.id, 'sdk-locked', 'full')
    Files.setApiKey((await makeKey(s, u.id)).key)
    const locked = await sdkError(Folder.create('sdk-locked/sub'))
    expect(describeError(locked)).toEqual({
      className: 'ProcessingFailure_FolderLockedError',
      type: 'processing-failure/folder-locked',
      httpCode: 422,
    })

    Files.setApiKey(s.adminKey)
    await Behavior.create({ path: 'sdk-homes', behavior: 'create_user_folders', value: '{}' })
    await User.create({ username: 'sdk-made', password: 'sdk-made-password-1' })
    expect((await findRow(s, 'sdk-homes/sdk-made'))?.type).toBe('directory')
  })

  it('surfaces the refusals as the SDK’s typed errors', async () => {
    Files.setApiKey(s.adminKey)
    const bad = await sdkError(
      Behavior.create({ path: 'sdk/bad', behavior: 'limit_file_regex', value: '{"regex": "("}' }),
    )
    expect(describeError(bad)).toEqual({
      className: 'ProcessingFailure_ModelSaveErrorError',
      type: 'processing-failure/model-save-error',
      httpCode: 422,
    })
    const unsupported = await sdkError(Behavior.create({ path: 'sdk/bad', behavior: 'watermark' }))
    expect(describeError(unsupported).type).toBe('processing-failure/model-save-error')

    const u = await makeUser(s)
    await grant(s, u.id, 'sdk', 'full')
    Files.setApiKey((await makeKey(s, u.id)).key)
    const denied = await sdkError(Behavior.list())
    expect(describeError(denied)).toEqual({
      className: 'NotAuthorized_FolderAdminPermissionRequiredError',
      type: 'not-authorized/folder-admin-permission-required',
      httpCode: 403,
    })
  })
})

describe.each(dialects)('files.com SDK: webhook behaviors (%s)', (dialect) => {
  let s: TestServer
  let listener: TestListener
  sdkServer(
    dialect,
    (server) => {
      s = server
    },
    () => ({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }),
  )
  beforeAll(async () => {
    listener = await startListener()
  })
  afterAll(async () => {
    await listener.close()
  })

  it('creates a webhook behavior with Behavior.create, which delivers, and sends a test with Behavior.webhookTest', async () => {
    Files.setApiKey(s.adminKey)
    const created = await Behavior.create({
      path: 'sdk-hooks',
      behavior: 'webhook',
      value: JSON.stringify({ urls: [listener.url], triggers: ['create'], headers: { 'X-Key': 'k-1' } }),
    })
    expect(created.getBehavior()).toBe('webhook')
    expect(created.getValue()).toMatchObject({ urls: [listener.url], headers: { 'X-Key': null } })
    await uploaded(s, 'sdk-hooks/a.txt', 'x')
    const [got] = await listener.waitFor(1)
    expect([got!.json.path, got!.headers['x-key']]).toEqual(['sdk-hooks/a.txt', 'k-1'])

    await Behavior.webhookTest({ url: listener.url, method: 'GET', encoding: 'JSON', action: 'Upload' })
    const all = await listener.waitFor(2)
    const test = all[1]!
    expect(test.method).toBe('GET')
    expect(new URL(test.url, 'http://x').searchParams.get('operation')).toBe('Upload')

    const missing = await sdkError(Behavior.webhookTest({ url: 'http://10.9.9.9/x' }))
    expect(describeError(missing)).toMatchObject({
      type: 'processing-failure/model-save-error',
      httpCode: 422,
    })
  })
})
