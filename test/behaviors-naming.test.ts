import { beforeAll, describe, expect, it } from 'vitest'
import { findRow, pathsUnder } from './helpers/file-rows.js'
import { beginUpload, endUpload, split, target, uploadFile, uploadRefusal } from './helpers/files.js'
import { startListener } from './helpers/listener.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'

/**
 * append_timestamp and override_upload_filename: the stored name is rewritten at the upload's
 * commit; `end`, the File and the Action show the final name.
 */
describe.each(dialects)('renaming behaviors (%s)', (dialect) => {
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  let userKey: string

  const rule = async (path: string, behavior: string, value: unknown, more: Record<string, unknown> = {}) => {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path, behavior, value, ...more },
    })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  /** Uploads `content` to `path` and returns the `end` answer's File. */
  const put = async (path: string, content: string, key = s.adminKey, open: Record<string, unknown> = {}) => {
    const { end } = await uploadFile(
      s,
      path,
      split(Buffer.from(content), s.container.config.files.partSize),
      {
        key,
        open,
      },
    )
    expect(end.status, end.text).toBe(201)
    return end.body
  }

  beforeAll(async () => {
    const u = await makeUser(s, { username: 'uploader' })
    await grant(s, u.id, 'named', 'full')
    userKey = (await makeKey(s, u.id)).key
  })

  it('validates each value with model-save-error naming the field', async () => {
    const cases: [string, unknown, string][] = [
      ['append_timestamp', { format: 'a/b' }, 'value.format'],
      ['append_timestamp', { format: '' }, 'value.format'],
      ['append_timestamp', { time_zone: 'Mars/Olympus' }, 'value.time_zone'],
      ['append_timestamp', { zone: 'UTC' }, 'value.zone'],
      ['override_upload_filename', {}, 'value.filename_override_pattern'],
      [
        'override_upload_filename',
        { filename_override_pattern: 'x/{filename}' },
        'value.filename_override_pattern',
      ],
      [
        'override_upload_filename',
        { filename_override_pattern: '{nope}.txt' },
        'value.filename_override_pattern',
      ],
      ['override_upload_filename', { filename_override_pattern: '{name}', time_zone: 3 }, 'value.time_zone'],
    ]
    for (const [behavior, value, field] of cases) {
      const r = await call(s, 'POST', '/behaviors', { key: s.adminKey, body: { path: 'v', behavior, value } })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors), JSON.stringify(value)).toEqual([field])
    }
    const unknown = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: {
        path: 'v',
        behavior: 'override_upload_filename',
        value: { filename_override_pattern: '{nope}' },
      },
    })
    expect(unknown.body.model_errors['value.filename_override_pattern'][0]).toContain('{nope}')
    const shown = await rule('v/ok', 'append_timestamp', {})
    expect(shown.value).toEqual({ format: '-YYYY-MM-DDThh:mm:ssZ', time_zone: 'UTC' })
  })

  it('append_timestamp inserts the commit time before the extension, in the time zone asked for', async () => {
    await rule('named/stamped', 'append_timestamp', {})
    const before = Date.now()
    const file = await put('named/stamped/report.csv', 'a,b\n', userKey)
    const m = /^named\/stamped\/report-(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z\.csv$/.exec(file.path)
    expect(m, file.path).not.toBeNull()
    const at = Date.UTC(+m![1]!, +m![2]! - 1, +m![3]!, +m![4]!, +m![5]!, +m![6]!)
    expect(at).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000)
    expect(await findRow(s, 'named/stamped/report.csv')).toBeUndefined()
    expect((await findRow(s, file.path))?.size).toBe(4)
    // The Action names the stored file.
    const history = await call(s, 'GET', `/history/files/${file.path}`, { key: s.adminKey })
    expect(history.status).toBe(200)
    expect(history.body.map((a: any) => [a.action, a.path])).toContainEqual(['create', file.path])

    await rule('named/kolkata', 'append_timestamp', { format: '_YYYYMMDD_hhmm Z', time_zone: 'Asia/Kolkata' })
    const k = await put('named/kolkata/notes', 'x')
    expect(k.path).toMatch(/^named\/kolkata\/notes_\d{8}_\d{4} \+05:30$/)
  })

  it('override_upload_filename rewrites the name with its placeholders; rules check the name sent', async () => {
    await rule('named/over', 'override_upload_filename', {
      filename_override_pattern: '{username}-{filename}-{YYYY}{extension}',
    })
    await rule('named/over', 'limit_file_regex', { regex: '^report' })
    const file = await put('named/over/report.CSV', 'rows', userKey)
    expect(file.path).toBe(`named/over/uploader-report-${new Date().getUTCFullYear()}.CSV`)
    // The name sent is what the name rules judge, at the opening, before any byte.
    expectError(
      await uploadRefusal(target(s, userKey), 'named/over/other.csv', 'x'),
      422,
      'processing-failure/invalid-filename',
    )
  })

  it('a name the rule would make invalid is refused when the upload opens', async () => {
    await rule('named/ext-only', 'override_upload_filename', { filename_override_pattern: '{extension}' })
    const refused = await uploadRefusal(target(s), 'named/ext-only/README', 'x')
    expectError(refused, 422, 'processing-failure/invalid-filename')
    expect(refused.body.error).toContain('not a valid name')
    expect((await put('named/ext-only/a.txt', 'x')).path).toBe('named/ext-only/.txt')
  })

  it('the site’s webhook reports the stored name', async () => {
    const listener = await startListener()
    try {
      const set = await call(s, 'PATCH', '/webhook_settings', {
        key: s.adminKey,
        body: { url: listener.url, triggers: ['Upload'], enabled: true },
      })
      expect(set.status).toBe(200)
      await rule('named/hooked', 'override_upload_filename', { filename_override_pattern: 'hooked-{name}' })
      expect((await put('named/hooked/a.txt', 'x')).path).toBe('named/hooked/hooked-a.txt')
      const [got] = await listener.waitFor(1)
      expect([got!.json.operation, got!.json.path]).toEqual(['Upload', 'named/hooked/hooked-a.txt'])
    } finally {
      await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { url: null, enabled: false } })
      await listener.close()
    }
  })

  it('a clash replaces the file there, or with with_rename takes the next free name', async () => {
    await rule('named/fixed', 'override_upload_filename', { filename_override_pattern: 'latest{extension}' })
    expect((await put('named/fixed/a.csv', 'first')).path).toBe('named/fixed/latest.csv')
    expect((await put('named/fixed/b.csv', 'second!')).path).toBe('named/fixed/latest.csv')
    expect((await findRow(s, 'named/fixed/latest.csv'))?.size).toBe(7)
    const t = target(s)
    const { ref } = await beginUpload(t, 'named/fixed/c.csv', { with_rename: true })
    const end = await endUpload(t, 'named/fixed/c.csv', ref, { with_rename: true })
    expect(end.status, end.text).toBe(201)
    expect(end.body.path).toBe('named/fixed/latest (1).csv')
  })

  it('an upload that never ends leaves no name behind', async () => {
    await rule('named/aborted', 'append_timestamp', {})
    const t = target(s)
    await beginUpload(t, 'named/aborted/x.txt')
    expect(await pathsUnder(s, 'named/aborted')).toEqual([])
  })

  it('inheritance and cancellation three levels deep', async () => {
    await rule(
      'deep',
      'override_upload_filename',
      { filename_override_pattern: 'top-{name}' },
      { recursive: true },
    )
    await rule('deep/a', 'append_timestamp', { format: '-YYYY' })
    await rule(
      'deep/a/b/c',
      'override_upload_filename',
      { filename_override_pattern: 'own-{name}' },
      {
        disable_parent_folder_behavior: true,
      },
    )
    const year = new Date().getUTCFullYear()
    expect((await put('deep/x.txt', '1')).path).toBe('deep/top-x.txt')
    // deep/a: the inherited override, then its own (non-recursive) timestamp.
    expect((await put('deep/a/x.txt', '1')).path).toBe(`deep/a/top-x-${year}.txt`)
    // deep/a/b: only the recursive override reaches it.
    expect((await put('deep/a/b/x.txt', '1')).path).toBe('deep/a/b/top-x.txt')
    // deep/a/b/c: its own override cancels the one from above.
    expect((await put('deep/a/b/c/x.txt', '1')).path).toBe('deep/a/b/c/own-x.txt')
    // Below it, non-recursive: nothing of its type applies any more (cancelled from c down).
    expect((await put('deep/a/b/c/d/x.txt', '1')).path).toBe('deep/a/b/c/d/x.txt')
  })

  it('a share link visitor’s upload is renamed the same way', async () => {
    await call(s, 'POST', '/folders/inbox', { key: s.adminKey, body: {} })
    // Recursive: a visitor's upload lands in a subfolder named after them.
    await rule(
      'inbox',
      'override_upload_filename',
      { filename_override_pattern: 'in-{name}' },
      { recursive: true },
    )
    const link = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: ['inbox'], permissions: 'read_write' },
    })
    expect(link.status).toBe(201)
    const reg = await call(s, 'POST', `/public/bundles/${link.body.code}/registrations`, {
      body: { name: 'V' },
    })
    const headers = { 'X-Bundle-Registration-Code': reg.body.code }
    const base = `/public/bundles/${link.body.code}/files/inbox/drop.txt`
    const opened = await call(s, 'POST', base, { headers, body: { action: 'put' } })
    expect(opened.status, opened.text).toBe(201)
    const sent = await fetch(opened.body.upload_uri, { method: 'PUT', body: 'hello' })
    expect(sent.status).toBe(200)
    const end = await call(s, 'POST', base, { headers, body: { action: 'end', ref: opened.body.ref } })
    expect(end.status, end.text).toBe(201)
    expect(end.body.path).toBe('inbox/V/in-drop.txt')
    expect((await findRow(s, 'inbox/V/in-drop.txt'))?.size).toBe(5)
  })
})
