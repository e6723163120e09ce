import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'

describe.each(dialects)('A user’s files as one ZIP (%s)', (dialect) => {
  let skew = 0
  const s = useServer(dialect, {}, { now: () => Date.now() + skew })
  let n = 0

  /** A user with read on z<n>/, a file and a folder in it, and the user's key. */
  async function fixture() {
    n++
    const root = `z${n}`
    const user = await makeUser(s, { username: `zipper${n}` })
    await makeFile(s, `${root}/a.txt`, 'alpha')
    await makeFile(s, `${root}/sub/b.txt`, 'bee')
    await makeFolder(s, `${root}/sub/empty`)
    await makeFile(s, `${root}/other.txt`, 'not asked for')
    await grant(s, user.id, root, 'readonly')
    const key = (await makeKey(s, user.id)).key
    return { root, user, key }
  }
  const zipOf = (key: string, paths: unknown) =>
    call(s, 'POST', '/file_actions/zip_download', { key, body: { paths } })

  async function entries(uri: string): Promise<{ names: string[]; file: string }> {
    const res = await fetch(uri)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/zip')
    const file = join(mkdtempSync(join(tmpdir(), 'wharf-zip-')), 'x.zip')
    writeFileSync(file, Buffer.from(await res.arrayBuffer()))
    const names = execFileSync('unzip', ['-Z1', file]).toString().split('\n').filter(Boolean).sort()
    // Every entry's bytes match the checksum written for it.
    execFileSync('unzip', ['-tq', file])
    return { names, file }
  }

  it('zips the files and folders named, folders recursively, and records each file read', async () => {
    const { root, user, key } = await fixture()
    const link = await zipOf(key, [`${root}/a.txt`, `${root}/sub`])
    expect(link.status).toBe(200)
    expect(link.body.download_uri).toMatch(
      new RegExp(`^${s.url}/api/rest/v1/zip_downloads/[^/]+/${root}\\.zip$`),
    )
    const { names, file } = await entries(link.body.download_uri)
    // Named below the folder holding them all.
    expect(names).toEqual(['a.txt', 'sub/', 'sub/b.txt', 'sub/empty/'])
    expect(execFileSync('unzip', ['-p', file, 'sub/b.txt']).toString()).toBe('bee')
    const reads = await s.container.db
      .selectFrom('actions')
      .select(['path', 'user_id', 'interface'])
      .where('action', '=', 'read')
      .where('path', 'like', `${root}/%`)
      .orderBy('path')
      .execute()
    expect(reads).toEqual([
      { path: `${root}/a.txt`, user_id: user.id, interface: 'restapi' },
      { path: `${root}/sub/b.txt`, user_id: user.id, interface: 'restapi' },
    ])

    // One folder: the ZIP is named after it, its name first inside.
    const one = await zipOf(key, [`${root}/sub`])
    expect(one.body.download_uri).toMatch(/\/sub\.zip$/)
    expect((await entries(one.body.download_uri)).names).toEqual(['sub/', 'sub/b.txt', 'sub/empty/'])
    // The root folder, for whoever may read it all (a site-wide key).
    const all = await zipOf(s.adminKey, [''])
    expect(all.status).toBe(200)
    expect((await entries(all.body.download_uri)).names).toEqual(
      expect.arrayContaining([`${root}/`, `${root}/a.txt`, `${root}/other.txt`, `${root}/sub/b.txt`]),
    )
  })

  it('records a ZIP of many files in a few transactions, and cuts the ZIP short when its reads cannot be recorded', async () => {
    const { root, key } = await fixture()
    for (let i = 0; i < 300; i++) await makeFile(s, `${root}/many/f${i}.txt`, `file ${i}`)
    const downloads = s.container.services.downloads
    const batches: number[] = []
    const real = downloads.recordReads.bind(downloads)
    // A database slower than the files are small: the ZIP streams on while a batch is written.
    const spy = vi.spyOn(downloads, 'recordReads').mockImplementation(async (ds, ip) => {
      batches.push(ds.length)
      await new Promise((resolve) => setTimeout(resolve, 50))
      return real(ds, ip)
    })
    try {
      const link = await zipOf(key, [`${root}/many`])
      const { names } = await entries(link.body.download_uri)
      expect(names).toHaveLength(301)
      // Every file read is recorded, once; in fewer transactions than files.
      expect(batches.reduce((a, b) => a + b, 0)).toBe(300)
      expect(batches.length).toBeLessThan(30)
      const reads = await s.container.db
        .selectFrom('actions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('action', '=', 'read')
        .where('path', 'like', `${root}/many/%`)
        .executeTakeFirstOrThrow()
      expect(Number(reads.n)).toBe(300)

      // A database that refuses the records: the ZIP never gets its central directory.
      spy.mockRejectedValue(new Error('the database is gone'))
      const cut = await zipOf(key, [`${root}/many`])
      const res = await fetch(cut.body.download_uri)
      expect(res.status).toBe(200)
      const read = await res.arrayBuffer().then(
        (b) => Buffer.from(b),
        () => null,
      )
      if (read !== null) {
        const file = join(mkdtempSync(join(tmpdir(), 'wharf-zip-')), 'cut.zip')
        writeFileSync(file, read)
        expect(() => execFileSync('unzip', ['-Z1', file], { stdio: 'pipe' })).toThrow()
      }
    } finally {
      spy.mockRestore()
    }
  })

  it('refuses what the caller may not zip, saying why', async () => {
    const { root, key } = await fixture()
    const unauthenticated = await call(s, 'POST', '/file_actions/zip_download', {
      body: { paths: [`${root}/a.txt`] },
    })
    expectError(unauthenticated, 401, 'not-authenticated/authentication-required')
    expectError(await zipOf(key, []), 400, 'bad-request/request-params-invalid')
    expectError(
      await zipOf(
        key,
        Array.from({ length: 101 }, (_, i) => `${root}/f${i}`),
      ),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(await zipOf(key, [`${root}/missing.txt`]), 404, 'not-found/file-not-found')
    expectError(await zipOf(key, ['elsewhere/a.txt']), 403, 'not-authorized/read-permission-required')
    expectError(await zipOf(key, ['']), 403, 'not-authorized/read-permission-required')
    const userId = (await call(s, 'GET', '/users', { key: s.adminKey })).body.find(
      (u: any) => u.username === `zipper${n}`,
    ).id
    const narrow = (await makeKey(s, userId, { path: `${root}/sub` })).key
    expectError(await zipOf(narrow, [`${root}/a.txt`]), 403, 'not-authorized/api-key-is-path-restricted')
  })

  it('checks the link when it is used: signature, address, user and permissions as they are then', async () => {
    const { root, user, key } = await fixture()
    const uri = async (paths: string[]) => new URL((await zipOf(key, paths)).body.download_uri).pathname

    const tampered = (await uri([`${root}/a.txt`])).replace(/~[^/]+/, '~AAAA')
    expectError(
      await call(s, 'GET', tampered.replace('/api/rest/v1', '')),
      401,
      'not-authenticated/invalid-or-expired-code',
    )

    // Past its time (DOWNLOAD_URL_SECONDS), as a download link.
    const late = await uri([`${root}/a.txt`])
    skew = 2 * 3600_000
    try {
      expectError(
        await call(s, 'GET', late.replace('/api/rest/v1', '')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
    } finally {
      skew = 0
    }
    expect((await call(s, 'GET', late.replace('/api/rest/v1', ''))).status).toBe(200)

    const foreign = await s.app.inject({
      method: 'GET',
      url: await uri([`${root}/a.txt`]),
      remoteAddress: '192.0.2.9',
    })
    expect({ status: foreign.statusCode, type: foreign.json().type }).toEqual({
      status: 403,
      type: 'not-authorized/zip-download-ip-mismatch',
    })

    const gone = await uri([`${root}/other.txt`])
    await call(s, 'DELETE', `/files/${root}/other.txt`, { key: s.adminKey })
    expectError(await call(s, 'GET', gone.replace('/api/rest/v1', '')), 404, 'not-found/file-not-found')

    const revoked = await uri([`${root}/a.txt`])
    const perms = await call(s, 'GET', `/permissions?user_id=${user.id}`, { key: s.adminKey })
    for (const p of perms.body) await call(s, 'DELETE', `/permissions/${p.id}`, { key: s.adminKey })
    expectError(
      await call(s, 'GET', revoked.replace('/api/rest/v1', '')),
      403,
      'not-authorized/read-permission-required',
    )

    await grant(s, user.id, root, 'readonly')
    const deleted = await uri([`${root}/a.txt`])
    await call(s, 'DELETE', `/users/${user.id}`, { key: s.adminKey })
    expectError(
      await call(s, 'GET', deleted.replace('/api/rest/v1', '')),
      401,
      'not-authenticated/invalid-or-expired-code',
    )
  })
})
