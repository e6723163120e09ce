import crypto from 'node:crypto'
import net from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { MAX_XML_TAGS } from '../src/dav/dav-xml.js'
import { MAX_PROPERTIES } from '../src/dav/properties.js'
import { basic, dav, davType, rawDav } from './helpers/dav.js'
import { dialects, grant, makeKey, makeUser, useServer } from './helpers/server.js'

const PROPFIND_ETAG =
  '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><D:resourcetype/><x:nope xmlns:x="urn:x"/></D:prop></D:propfind>'

describe('WebDAV settings', () => {
  it('serves /dav by default and takes another prefix, but not / or one the API or web interface uses', () => {
    expect(loadConfig({}).dav).toEqual({ enabled: true, prefix: '/dav', authCacheSeconds: 300 })
    expect(loadConfig({ DAV_PREFIX: '/files/dav/', DAV_ENABLED: 'false' }).dav).toMatchObject({
      enabled: false,
      prefix: '/files/dav',
    })
    for (const bad of ['/', 'dav', '/api/dav', '/assets', '/a b', '/../x']) {
      expect(() => loadConfig({ DAV_PREFIX: bad }), bad).toThrow(/DAV_PREFIX/)
    }
  })

  describe('turned off', () => {
    const off = useServer('sqlite', { DAV_ENABLED: 'false' })

    it('is not served when turned off', async () => {
      expect((await dav(off, 'OPTIONS', '/', { auth: null })).headers.get('dav')).toBeNull()
      expect((await dav(off, 'GET', '/x', { auth: basic('admin', 'admin-password-1') })).status).toBe(404)
    })
  })
})

describe.each(dialects)('WebDAV protocol (%s)', (dialect) => {
  let alice: string

  const s = useServer(dialect)
  beforeAll(async () => {
    const u = await makeUser(s, { username: 'alice' })
    alice = basic('alice', u.password)
    await grant(s, u.id, 'home', 'full')
    expect((await dav(s, 'MKCOL', '/home', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
  })

  it('answers OPTIONS with the DAV classes, without credentials', async () => {
    const r = await dav(s, 'OPTIONS', '/', { auth: null })
    expect(r.status).toBe(200)
    expect(r.headers.get('dav')).toBe('1, 2')
    expect(r.headers.get('allow')).toContain('PROPFIND')
    // Office asks the server's root, wherever the tree is.
    const root = await fetch(`${s.url}/`, { method: 'OPTIONS' })
    expect(root.status).toBe(200)
    expect(root.headers.get('ms-author-via')).toBe('DAV')
  })

  it('asks for Basic credentials, and refuses wrong ones', async () => {
    const r = await dav(s, 'PROPFIND', '/', { auth: null, headers: { Depth: '0' } })
    expect(r.status).toBe(401)
    expect(r.headers.get('www-authenticate')).toBe('Basic realm="Wharf", charset="UTF-8"')
    expect(davType(r)).toBe('not-authenticated/authentication-required')
    // The tree's own URL without its slash, as Windows maps it.
    const bare = await fetch(`${s.url}/dav`, {
      method: 'PROPFIND',
      headers: { Depth: '0', Authorization: alice },
    })
    expect(bare.status).toBe(207)
    expect(await bare.text()).toContain('<D:href>/dav/</D:href>')
    const bad = await dav(s, 'PROPFIND', '/', { auth: basic('alice', 'wrong'), headers: { Depth: '0' } })
    expect(bad.status).toBe(401)
  })

  it('puts, lists, reads ranges, moves and deletes', async () => {
    const data = crypto.randomBytes(70_000)
    expect((await dav(s, 'PUT', '/home/a.bin', { auth: alice, body: data })).status).toBe(201)
    expect((await dav(s, 'PUT', '/home/a.bin', { auth: alice, body: data })).status).toBe(204)
    const list = await dav(s, 'PROPFIND', '/home/', {
      auth: alice,
      headers: { Depth: '1' },
      body: PROPFIND_ETAG,
    })
    expect(list.status).toBe(207)
    expect(list.text).toContain('<D:href>/dav/home/a.bin</D:href>')
    expect(list.text).toContain('HTTP/1.1 404 Not Found')
    const part = await dav(s, 'GET', '/home/a.bin', { auth: alice, headers: { Range: 'bytes=10-19' } })
    expect(part.status).toBe(206)
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${data.length}`)
    const out = await dav(s, 'GET', '/home/a.bin', { auth: alice, headers: { Range: 'bytes=99999999-' } })
    expect(out.status).toBe(416)
    const moved = await dav(s, 'MOVE', '/home/a.bin', {
      auth: alice,
      headers: { Destination: `${s.url}/dav/home/b.bin` },
    })
    expect(moved.status).toBe(201)
    expect((await dav(s, 'DELETE', '/home/b.bin', { auth: alice })).status).toBe(204)
    expect((await dav(s, 'DELETE', '/home/b.bin', { auth: alice })).status).toBe(404)
  })

  it('replaces a folder on MOVE with Overwrite T instead of merging, copies a folder alone at Depth 0, renames case only', async () => {
    const to = (p: string) => ({ Destination: `${s.url}/dav/home/${p}` })
    for (const p of ['/home/f1', '/home/f2'])
      expect((await dav(s, 'MKCOL', p, { auth: alice })).status).toBe(201)
    expect((await dav(s, 'PUT', '/home/f1/one.txt', { auth: alice, body: '1' })).status).toBe(201)
    expect((await dav(s, 'PUT', '/home/f2/two.txt', { auth: alice, body: '2' })).status).toBe(201)
    expect(
      (await dav(s, 'MOVE', '/home/f1/', { auth: alice, headers: { ...to('f2/'), Overwrite: 'F' } })).status,
    ).toBe(412)
    expect((await dav(s, 'MOVE', '/home/f1/', { auth: alice, headers: to('f2/') })).status).toBe(204)
    expect((await dav(s, 'GET', '/home/f2/two.txt', { auth: alice })).status).toBe(404)
    expect((await dav(s, 'GET', '/home/f2/one.txt', { auth: alice })).text).toBe('1')
    expect(
      (await dav(s, 'COPY', '/home/f2/', { auth: alice, headers: { ...to('f3/'), Depth: '0' } })).status,
    ).toBe(201)
    const f3 = await dav(s, 'PROPFIND', '/home/f3/', { auth: alice, headers: { Depth: '1' } })
    expect(f3.text.match(/<D:href>/g)).toHaveLength(1)
    expect(
      (await dav(s, 'COPY', '/home/f2/', { auth: alice, headers: { ...to('f2/inside/') } })).status,
    ).toBe(403)
    expect(
      (await dav(s, 'MOVE', '/home/f2/one.txt', { auth: alice, headers: to('f2/ONE.txt') })).status,
    ).toBe(201)
    const listed = await dav(s, 'PROPFIND', '/home/f2/', { auth: alice, headers: { Depth: '1' } })
    expect(listed.text).toContain('<D:href>/dav/home/f2/ONE.txt</D:href>')
  })

  it('lists every live property for allprop (or no body), their names for propname, and answers 304 to a current copy', async () => {
    expect((await dav(s, 'PUT', '/home/p.txt', { auth: alice, body: 'props' })).status).toBe(201)
    const all = await dav(s, 'PROPFIND', '/home/p.txt', { auth: alice, headers: { Depth: '0' } })
    expect(all.status).toBe(207)
    for (const p of ['resourcetype', 'displayname', 'getlastmodified', 'creationdate', 'supportedlock']) {
      expect(all.text).toContain(`<D:${p}`)
    }
    expect(all.text).toContain('<D:getcontentlength>5</D:getcontentlength>')
    expect(all.text).toContain('<D:getcontenttype>text/plain</D:getcontenttype>')
    const etag = /<D:getetag>([^<]*)<\/D:getetag>/.exec(all.text)![1]!.replace(/&quot;/g, '"')
    const names = await dav(s, 'PROPFIND', '/home/p.txt', {
      auth: alice,
      headers: { Depth: '0' },
      body: '<propfind xmlns="DAV:"><propname/></propfind>',
    })
    expect(names.text).toContain('<D:getetag/>')
    expect(names.text).not.toContain('<D:getcontentlength>5')
    const cached = await dav(s, 'GET', '/home/p.txt', { auth: alice, headers: { 'If-None-Match': etag } })
    expect(cached.status).toBe(304)
    expect(
      (await dav(s, 'GET', '/home/p.txt', { auth: alice, headers: { 'If-None-Match': '"other"' } })).text,
    ).toBe('props')
  })

  it('answers bad input with exact statuses', async () => {
    const propfind = (headers: Record<string, string>, body?: string) =>
      dav(s, 'PROPFIND', '/home/', { auth: alice, headers, ...(body !== undefined ? { body } : {}) })
    expect((await propfind({ Depth: '2' })).status).toBe(400)
    const inf = await propfind({ Depth: 'infinity' })
    expect(inf.status).toBe(403)
    expect(inf.text).toContain('<D:propfind-finite-depth/>')
    expect((await propfind({ Depth: '0' }, '<D:propfind xmlns:D="DAV:"><D:prop>')).status).toBe(400)
    expect((await propfind({ Depth: '0' }, '<!DOCTYPE x [<!ENTITY a "b">]><x/>')).status).toBe(400)
    expect((await dav(s, 'MOVE', '/home/', { auth: alice })).status).toBe(400)
    expect(
      (
        await dav(s, 'MOVE', '/home/x', {
          auth: alice,
          headers: { Destination: 'http://elsewhere.example/dav/y' },
        })
      ).status,
    ).toBe(502)
    expect(await rawDav(s, 'GET', '/home/%2e%2e/x', alice)).toBe(400)
    expect(await rawDav(s, 'GET', '/home/../x', alice)).toBe(400)
    expect(await rawDav(s, 'GET', '/home/a%2Fb', alice)).toBe(400)
    expect(await rawDav(s, 'GET', '/home/%E0%A4%A', alice)).toBe(400)
    expect((await dav(s, 'GET', '/home/a%01b', { auth: alice })).status).toBe(400)
    expect((await dav(s, 'GET', `/home/${'a'.repeat(5001)}`, { auth: alice })).status).toBe(400)
    expect((await dav(s, 'MKCOL', '/home/new', { auth: alice, body: 'x' })).status).toBe(415)
    expect((await dav(s, 'MKCOL', '/home', { auth: alice })).status).toBe(405)
    expect((await dav(s, 'MKCOL', '/home/no/such', { auth: alice })).status).toBe(409)
    expect((await dav(s, 'PUT', '/home/no/such.txt', { auth: alice, body: 'x' })).status).toBe(409)
  })

  it('answers methods it does not speak and requests HTTP cannot parse with an HTTP error, and goes on', async () => {
    /** One request sent byte for byte (no client library would send these); its status line. */
    const raw = (requestLine: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(s.url).port), '127.0.0.1')
        let out = ''
        socket.on('data', (d) => {
          out += d
        })
        socket.on('error', reject)
        socket.on('close', () => resolve(out.split('\r\n')[0]!))
        socket.write(
          `${requestLine}\r\nHost: 127.0.0.1\r\nAuthorization: ${alice}\r\nConnection: close\r\n\r\n`,
        )
      })
    // A method HTTP does not know is the HTTP parser's 400; known ones WebDAV has not, 405.
    expect(await raw('FROB /dav/home/x HTTP/1.1')).toBe('HTTP/1.1 400 Bad Request')
    for (const method of ['REPORT', 'SEARCH', 'BIND', 'ACL']) {
      expect(await raw(`${method} /dav/home/x HTTP/1.1`), method).toBe('HTTP/1.1 405 Method Not Allowed')
    }
    // Control characters, raw or encoded, and a URL past the header limit.
    expect(await raw('GET /dav/home/a\x01b HTTP/1.1')).toBe('HTTP/1.1 400 Bad Request')
    expect(await raw('GET /dav/home/a%00b HTTP/1.1')).toBe('HTTP/1.1 400 Bad Request')
    expect(await raw('PUT /dav/home/a%7Fb HTTP/1.1')).toBe('HTTP/1.1 400 Bad Request')
    expect(await raw(`GET /dav/home/${'x'.repeat(20_000)} HTTP/1.1`)).toBe(
      'HTTP/1.1 431 Request Header Fields Too Large',
    )
    // A PUT to a name that is too long is refused before any byte is staged.
    const long = await dav(s, 'PUT', `/home/${'b'.repeat(5001)}`, { auth: alice, body: 'x' })
    expect(long.status).toBe(400)
    expect(davType(long)).toBe('processing-failure/path-too-long')
    expect(
      await s.container.db.selectFrom('uploads').select('id').where('path', 'like', 'home/bb%').execute(),
    ).toEqual([])
    expect((await dav(s, 'PROPFIND', '/home/', { auth: alice, headers: { Depth: '0' } })).status).toBe(207)
  })

  it('refuses a PROPPATCH or PROPFIND naming more properties than the cap, and serves one at the cap alongside others', async () => {
    expect((await dav(s, 'PUT', '/home/many.txt', { auth: alice, body: 'm' })).status).toBe(201)
    const props = (n: number) => Array.from({ length: n }, (_, i) => `<x:p${i}/>`).join('')
    const patch = (n: number) =>
      dav(s, 'PROPPATCH', '/home/many.txt', {
        auth: alice,
        body: `<D:propertyupdate xmlns:D="DAV:" xmlns:x="urn:x"><D:remove><D:prop>${props(n)}</D:prop></D:remove></D:propertyupdate>`,
      })
    const find = (n: number) =>
      dav(s, 'PROPFIND', '/home/many.txt', {
        auth: alice,
        headers: { Depth: '0' },
        body: `<D:propfind xmlns:D="DAV:" xmlns:x="urn:x"><D:prop>${props(n)}</D:prop></D:propfind>`,
      })
    for (const over of [await patch(MAX_PROPERTIES + 1), await find(MAX_PROPERTIES + 1)]) {
      expect(over.status).toBe(413)
      expect(over.text).toContain('<W:too-many-properties/>')
    }
    // A body of tens of thousands of elements is refused before it is parsed.
    const huge = await patch(MAX_XML_TAGS)
    expect(huge.status).toBe(413)
    expect(huge.text).toContain('<W:too-many-elements/>')
    // At the cap: every property answered once, while a cheap request is served too.
    const [atCap, found, cheap] = await Promise.all([
      patch(MAX_PROPERTIES),
      find(MAX_PROPERTIES),
      dav(s, 'OPTIONS', '/', { auth: null }),
    ])
    expect(atCap.status).toBe(207)
    expect(atCap.text.match(/<p\d+ xmlns="urn:x"\/>/g)).toHaveLength(MAX_PROPERTIES)
    expect(atCap.text).toContain('HTTP/1.1 200 OK')
    expect(found.status).toBe(207)
    expect(found.text.match(/<p\d+ xmlns="urn:x"\/>/g)).toHaveLength(MAX_PROPERTIES)
    expect(cheap.status).toBe(200)
  })

  it('locks a path where nothing is by creating an empty file, and takes the token in a tagged If list', async () => {
    const lockinfo =
      '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>'
    const r = await dav(s, 'LOCK', '/home/new.txt', {
      auth: alice,
      body: lockinfo,
      headers: { Timeout: 'Infinite' },
    })
    expect(r.status).toBe(201)
    expect(r.text).toContain('<D:timeout>Second-3600</D:timeout>')
    const token = /<(opaquelocktoken:[^>]+)>/.exec(r.headers.get('lock-token') ?? '')![1]!
    const again = await dav(s, 'LOCK', '/home/new.txt', { auth: alice, body: lockinfo })
    expect(again.status).toBe(423)
    expect(again.text).toContain('<D:no-conflicting-lock/>')
    const shared = lockinfo.replace('<D:exclusive/>', '<D:shared/>')
    expect((await dav(s, 'LOCK', '/home/other.txt', { auth: alice, body: shared })).status).toBe(501)
    const head = await dav(s, 'HEAD', '/home/new.txt', { auth: alice })
    expect(head.headers.get('content-length')).toBe('0')
    const tagged = `<${s.url}/dav/home/new.txt> (<${token}>)`
    expect(
      (await dav(s, 'PUT', '/home/new.txt', { auth: alice, body: 'now', headers: { If: tagged } })).status,
    ).toBe(204)
    const refresh = await dav(s, 'LOCK', '/home/new.txt', {
      auth: alice,
      headers: { If: `(<${token}>)`, Timeout: 'Second-30' },
    })
    expect(refresh.status).toBe(200)
    expect(refresh.text).toContain('<D:timeout>Second-30</D:timeout>')
    expect(
      (await dav(s, 'PUT', '/home/new.txt', { auth: alice, body: 'x', headers: { If: '(<broken' } })).status,
    ).toBe(400)
    // A folder locked at depth 0 guards its list of members.
    const folder = await dav(s, 'LOCK', '/home/', { auth: alice, body: lockinfo, headers: { Depth: '0' } })
    expect(folder.status).toBe(200)
    expect((await dav(s, 'PUT', '/home/added.txt', { auth: alice, body: 'x' })).status).toBe(423)
    const folderToken = /<(opaquelocktoken:[^>]+)>/.exec(folder.headers.get('lock-token') ?? '')![1]!
    expect(
      (await dav(s, 'UNLOCK', '/home/', { auth: alice, headers: { 'Lock-Token': `<${folderToken}>` } }))
        .status,
    ).toBe(204)
    expect((await dav(s, 'PUT', '/home/added.txt', { auth: alice, body: 'x' })).status).toBe(201)
  })

  it('publishes nothing of a PUT whose connection drops halfway', async () => {
    const fsys = s.container.services.fileSystem
    const as = fsys.as.bind(fsys)
    let created!: () => void
    const opened = new Promise<void>((r) => {
      created = r
    })
    const aborted = new Promise<string>((resolve) => {
      // Watches the writer the facade hands out, to know when the server has given up on it.
      fsys.as = (p, iface) => {
        const files = as(p, iface)
        const create = files.createWriter.bind(files)
        files.createWriter = async (path, opts) => {
          const w = await create(path, opts)
          created()
          const abort = w.abort.bind(w)
          w.abort = async () => {
            await abort()
            resolve(w.path)
          }
          return w
        }
        return files
      }
    })
    try {
      const socket = net.connect(Number(new URL(s.url).port), '127.0.0.1')
      await new Promise<void>((r) => socket.once('connect', () => r()))
      socket.write(
        `PUT /dav/home/half.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${alice}\r\nContent-Length: 100000\r\n\r\n`,
      )
      await opened
      socket.write(Buffer.alloc(50_000, 7))
      socket.destroy()
      expect(await aborted).toBe('home/half.bin')
    } finally {
      fsys.as = as
    }
    expect(
      (await dav(s, 'PROPFIND', '/home/half.bin', { auth: alice, headers: { Depth: '0' } })).status,
    ).toBe(404)
  })

  it('refuses outside the folder permissions, and for a key with permission set none', async () => {
    const r = await dav(s, 'PUT', '/elsewhere.txt', { auth: alice, body: 'x' })
    expect(r.status).toBe(403)
    expect(davType(r)).toBe('not-authorized/write-permission-required')
    // A key restricted to a folder, as the password of its user, reaches that folder only.
    const dora = await makeUser(s, { username: 'dora' })
    await grant(s, dora.id, 'home', 'full')
    await grant(s, dora.id, 'other', 'full')
    const admin = basic('admin', 'admin-password-1')
    expect((await dav(s, 'MKCOL', '/other', { auth: admin })).status).toBe(201)
    expect((await dav(s, 'MKCOL', '/home/sub', { auth: admin })).status).toBe(201)
    const narrow = await makeKey(s, dora.id, { path: 'home/sub' })
    const byKey = basic('dora', narrow.key)
    expect((await dav(s, 'PUT', '/home/sub/k.txt', { auth: byKey, body: 'k' })).status).toBe(201)
    const outside = await dav(s, 'PUT', '/other/k.txt', { auth: byKey, body: 'k' })
    expect(outside.status).toBe(403)
    expect(
      (await dav(s, 'PUT', '/other/k.txt', { auth: basic('dora', dora.password), body: 'k' })).status,
    ).toBe(201)
    // A write-only inbox: uploads go in, nothing comes out.
    const ivy = await makeUser(s, { username: 'ivy' })
    await grant(s, ivy.id, 'home/inbox', 'writeonly')
    expect((await dav(s, 'MKCOL', '/home/inbox', { auth: admin })).status).toBe(201)
    const inbox = basic('ivy', ivy.password)
    expect((await dav(s, 'PUT', '/home/inbox/in.txt', { auth: inbox, body: 'in' })).status).toBe(201)
    expect((await dav(s, 'GET', '/home/inbox/in.txt', { auth: inbox })).status).toBe(403)
    const key = await makeKey(s, (await makeUser(s, { username: 'carol' })).id, { permission_set: 'none' })
    const k = await dav(s, 'PROPFIND', '/', { auth: basic('carol', key.key), headers: { Depth: '0' } })
    expect(k.status).toBe(403)
  })
})
