import crypto from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  download,
  enc,
  encAll,
  rawRequest,
  req,
  type Target,
  upload,
  uploadRefusal,
} from './helpers/files.js'
import { dialects, expectError, useServer } from './helpers/server.js'

/** How paths in URLs are read: encodings, odd characters, limits, case, and files vs folders. */
describe.each(dialects)('file paths over raw HTTP (%s)', (dialect) => {
  let t: Target
  const s = useServer(dialect)
  beforeAll(async () => {
    t = { api: s.api, key: s.adminKey }
  })

  const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`
  const meta = (p: string) => req(t, 'GET', `/file_actions/metadata/${p}`)
  const list = async (folder: string) => {
    const r = await req(t, 'GET', `/folders/${enc(folder)}`)
    expect(r.status).toBe(200)
    return (r.body as { display_name: string; path: string }[]).map((f) => f.display_name)
  }

  it('addresses the same file by a raw path and a fully encoded one', async () => {
    const root = unique('enc')
    const made = await upload(t, `${root}/b/c.txt`, 'abc')
    expect(made.path).toBe(`${root}/b/c.txt`)
    for (const p of [`${root}/b/c.txt`, encAll(`${root}/b/c.txt`), `${root}%2Fb/c.txt`]) {
      const r = await meta(p)
      expect({ p, status: r.status, id: r.body?.id }).toEqual({ p, status: 200, id: made.id })
      const g = await req(t, 'GET', `/files/${p}`)
      expect({ p, status: g.status, id: g.body?.id }).toEqual({ p, status: 200, id: made.id })
    }
    // Every step of an upload through the encoded form reaches the same file, and replaces it.
    const encoded: Target = { ...t, encode: encAll }
    const replaced = await upload(encoded, `${root}/b/c.txt`, 'new')
    expect(replaced.path).toBe(`${root}/b/c.txt`)
    expect((await download(encoded, `${root}/b/c.txt`)).toString()).toBe('new')
    expect((await download(t, `${root}/b/c.txt`)).toString()).toBe('new')
    expect(await list(`${root}/b`)).toEqual(['c.txt'])
  })

  it.each([
    ['accents and CJK', 'résumé/日本語.txt'],
    ['emoji', '📁 box/😀 smile.txt'],
    ['spaces', 'with space/a b  c.txt'],
    ['percent', 'pct/100% sure.txt'],
    ['hash', 'hash/#1 item.txt'],
    ['plus', 'plus/a+b.txt'],
    ['ampersand, equals, question mark', 'q/a&b=c?.txt'],
  ])('keeps names with %s exactly as given', async (_label, name) => {
    const p = `${unique('names')}/${name}`
    const made = await upload(t, p, name)
    expect(made.path).toBe(p)
    expect(made.display_name).toBe(p.slice(p.lastIndexOf('/') + 1))
    expect((await meta(enc(p))).body.path).toBe(p)
    expect((await meta(encAll(p))).body.path).toBe(p)
    expect((await download(t, p)).toString()).toBe(name)
    const parent = p.slice(0, p.lastIndexOf('/'))
    expect(await list(parent)).toEqual([made.display_name])
  })

  it('reads "+" in a path as a plus sign, never as a space', async () => {
    const root = unique('plus')
    await upload(t, `${root}/a+b.txt`, 'plus')
    expectError(await meta(`${root}/a%20b.txt`), 404, 'not-found/file-not-found')
    expect((await meta(`${root}/a+b.txt`)).body.path).toBe(`${root}/a+b.txt`)
  })

  it.each([
    ['a ".." segment, raw', (r: string) => `${r}/../x.txt`],
    ['a ".." segment, encoded', (r: string) => encAll(`${r}/../x.txt`)],
    ['a "." segment', (r: string) => encAll(`${r}/./x.txt`)],
    ['an empty segment', (r: string) => encAll(`${r}//x.txt`)],
    ['a newline', (r: string) => `${r}/a%0Ab.txt`],
    ['a NUL', (r: string) => `${r}/a%00b.txt`],
    ['a DEL', (r: string) => `${r}/a%7Fb.txt`],
    ['a C1 control, U+0080', (r: string) => `${r}/a%C2%80b.txt`],
    ['a C1 control, U+0085 (next line)', (r: string) => `${r}/a%C2%85b.txt`],
    ['a C1 control, U+009F', (r: string) => `${r}/a%C2%9Fb.txt`],
  ])('refuses %s with 400 invalid-path, on reads and on uploads', async (_label, make) => {
    const p = make(unique('bad'))
    expectError(await rawRequest(t, 'GET', `/files/${p}`), 400, 'bad-request/invalid-path')
    expectError(await rawRequest(t, 'GET', `/file_actions/metadata/${p}`), 400, 'bad-request/invalid-path')
    expectError(await rawRequest(t, 'GET', `/folders/${p}`), 400, 'bad-request/invalid-path')
    expectError(
      await rawRequest(t, 'POST', `/files/${p}`, { action: 'put' }),
      400,
      'bad-request/invalid-path',
    )
    expectError(await rawRequest(t, 'POST', `/folders/${p}`, {}), 400, 'bad-request/invalid-path')
  })

  it('refuses control characters, C0 and C1, in copy and move destinations, creating nothing', async () => {
    const root = unique('ctl')
    await upload(t, `${root}/a.txt`, 'a')
    for (const op of ['copy', 'move']) {
      for (const bad of ['\u0001', '\u007f', '\u0080', '\u0085', '\u009f']) {
        const r = await req(t, 'POST', `/file_actions/${op}/${enc(`${root}/a.txt`)}`, {
          destination: `${root}/x${bad}y/b.txt`,
        })
        expect({ op, bad, status: r.status, type: r.body?.type }).toEqual({
          op,
          bad,
          status: 400,
          type: 'bad-request/invalid-path',
        })
      }
    }
    expect(await list(root)).toEqual(['a.txt'])
    // Letters beside them in Latin-1 are names like any other.
    const ok = await req(t, 'POST', `/folders/${enc(`${root}/\u00a1hola \u00ff`)}`)
    expect(ok.status).toBe(201)
  })

  it('takes a path of exactly 5000 characters and refuses 5001 with 422 path-too-long', async () => {
    const folder = unique('long')
    // Random letters, so that no compression makes the length cheap for the database.
    const name = (n: number) =>
      crypto
        .randomBytes(n)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, 'x')
        .slice(0, n)
    const p5000 = `${folder}/${name(5000 - folder.length - 1)}`
    expect(p5000).toHaveLength(5000)
    const made = await upload(t, p5000, 'long')
    expect(made.path).toBe(p5000)
    expect((await download(t, p5000)).toString()).toBe('long')
    expect(await list(folder)).toEqual([made.display_name])

    const p5001 = `${p5000}y`
    expectError(
      await req(t, 'POST', `/files/${enc(p5001)}`, { action: 'put' }),
      422,
      'processing-failure/path-too-long',
    )
    expectError(await meta(enc(p5001)), 422, 'processing-failure/path-too-long')
    expectError(await req(t, 'POST', `/folders/${enc(p5001)}`), 422, 'processing-failure/path-too-long')
  })

  it('strips leading and trailing slashes', async () => {
    const root = unique('slash')
    const made = await upload(t, `${root}/s.txt`, 's')
    for (const p of [`/${root}/s.txt`, `${root}/s.txt/`, encAll(`/${root}/s.txt/`)]) {
      const r = await meta(p)
      expect({ p, status: r.status, path: r.body?.path }).toEqual({ p, status: 200, path: made.path })
    }
    const viaSlash = await upload(t, `/${root}/t.txt/`, 't')
    expect(viaSlash.path).toBe(`${root}/t.txt`)
  })

  it('refuses new folder and file names and copy or move destinations that end in whitespace', async () => {
    const root = unique('ws')
    await upload(t, `${root}/a.txt`, 'a')
    const trailing = 'bad-request/request-param-path-cannot-have-trailing-whitespace'
    for (const bad of [`${root}/name `, `${root}/tab\t`, `${root}/dir /inner`, `${root}/nbsp\u00a0`]) {
      const r = await req(t, 'POST', `/folders/${enc(bad)}`, { mkdir_parents: true })
      expect({ bad, status: r.status, type: r.body?.type }).toEqual({ bad, status: 400, type: trailing })
    }
    for (const op of ['copy', 'move']) {
      const r = await req(t, 'POST', `/file_actions/${op}/${enc(`${root}/a.txt`)}`, {
        destination: `${root}/b.txt `,
      })
      expectError(r, 400, trailing)
    }
    for (const bad of [`${root}/report.txt `, `${root}/dir /x.txt`]) {
      const r = await uploadRefusal(t, bad, 'x')
      expect({ bad, status: r.status, type: r.body?.type }).toEqual({ bad, status: 400, type: trailing })
    }
    // Leading and inner spaces are names like any other.
    const ok = await req(t, 'POST', `/folders/${enc(`${root}/ lead  inner`)}`)
    expect(ok.status).toBe(201)
    expect(ok.body.path).toBe(`${root}/ lead  inner`)
    expect(await list(root)).toEqual([' lead  inner', 'a.txt'])
  })

  it('finds files whatever the letter case, and lists them in their stored case', async () => {
    const root = unique('Case')
    const made = await upload(t, `${root}/Mixed.TXT`, 'case')
    for (const p of [`${root.toUpperCase()}/MIXED.TXT`, `${root.toLowerCase()}/mixed.txt`]) {
      const r = await meta(enc(p))
      expect({ status: r.status, id: r.body?.id, path: r.body?.path }).toEqual({
        status: 200,
        id: made.id,
        path: `${root}/Mixed.TXT`,
      })
    }
    expect((await download(t, `${root.toLowerCase()}/mixed.txt`)).toString()).toBe('case')
    expect(await list(root.toLowerCase())).toEqual(['Mixed.TXT'])
    // Another case of the same name is the same file: it is replaced, not doubled.
    await upload(t, `${root}/mixed.txt`, 'replaced')
    expect(await list(root)).toHaveLength(1)
    expect((await download(t, `${root}/MIXED.txt`)).toString()).toBe('replaced')
  })

  it('refuses a file where a folder is expected', async () => {
    const root = unique('ff')
    await upload(t, `${root}/f.txt`, 'f')
    expectError(
      await uploadRefusal(t, `${root}/f.txt/inner.txt`, 'x'),
      422,
      'processing-failure/destination-parent-conflict',
    )
    expectError(
      await req(t, 'GET', `/folders/${enc(`${root}/f.txt`)}`),
      400,
      'bad-request/folder-must-not-be-a-file',
    )
    const mk = await req(t, 'POST', `/folders/${enc(`${root}/f.txt/sub`)}`, { mkdir_parents: true })
    expectError(mk, 422, 'processing-failure/destination-parent-conflict')
    expect(await list(root)).toEqual(['f.txt'])
  })

  it('refuses a folder where a file is expected', async () => {
    const root = unique('df')
    await upload(t, `${root}/dir/inside.txt`, 'i')
    expectError(
      await req(t, 'GET', `/files/${enc(`${root}/dir`)}`),
      400,
      'bad-request/cannot-download-directory',
    )
    expectError(await uploadRefusal(t, `${root}/dir`, 'x'), 422, 'processing-failure/destination-exists')
    expect((await meta(enc(`${root}/dir`))).body.type).toBe('directory')
  })

  it('treats .json and .xml endings as part of the file name, not as a format', async () => {
    const root = unique('fmt')
    const json = await upload(t, `${root}/report.json`, '{"a":1}')
    const xml = await upload(t, `${root}/data.xml`, '<a/>')
    expect(json.path).toBe(`${root}/report.json`)
    const r = await req(t, 'GET', `/files/${enc(`${root}/report.json`)}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('application/json')
    expect(r.body.path).toBe(`${root}/report.json`)
    const m = await meta(enc(`${root}/data.xml`))
    expect(m.headers.get('content-type')).toContain('application/json')
    expect(m.body.id).toBe(xml.id)
    expectError(await meta(enc(`${root}/report`)), 404, 'not-found/file-not-found')
    expectError(await meta(enc(`${root}/data.json`)), 404, 'not-found/file-not-found')
    expect((await download(t, `${root}/report.json`)).toString()).toBe('{"a":1}')
    // The format comes from Accept there: XML about a file whose name ends in .json.
    const asXml = await fetch(`${s.api}/file_actions/metadata/${enc(`${root}/report.json`)}`, {
      headers: { 'X-FilesAPI-Key': s.adminKey, Accept: 'application/xml' },
    })
    expect(asXml.status).toBe(200)
    expect(asXml.headers.get('content-type')).toContain('application/xml')
    expect(await asXml.text()).toContain(`<path>${root}/report.json</path>`)
    await req(t, 'POST', `/folders/${enc(`${root}/box.json`)}`)
    expect(await list(`${root}/box.json`)).toEqual([])
  })
})
