import { beforeAll, describe, expect, it } from 'vitest'
import { adminFolders } from '../src/modules/permissions/permission-service.js'
import { call, dialects, login, makeKey, makeUser, type TestUser, useServer } from './helpers/server.js'

describe.each(dialects)('permissions (%s)', (dialect) => {
  /** Folder admin of `projects` and of `shared/team`. */
  let alice: TestUser
  let aliceKey: string
  /** A regular user with no admin permission anywhere. */
  let bob: TestUser
  let bobKey: string
  let carol: TestUser
  let bot: TestUser

  const grant = async (body: Record<string, unknown>, key = s.adminKey) =>
    call(s, 'POST', '/permissions', { key, body })
  const lastAction = (action: string) =>
    s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', action)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()

  const s = useServer(dialect)
  beforeAll(async () => {
    alice = await makeUser(s, { username: 'alice' })
    bob = await makeUser(s, { username: 'bob' })
    carol = await makeUser(s, { username: 'carol' })
    bot = await makeUser(s, { username: 'bot', self_managed: false })
    aliceKey = (await makeKey(s, alice.id)).key
    bobKey = (await makeKey(s, bob.id)).key
    for (const path of ['projects', 'shared/team']) {
      expect((await grant({ path, user_id: alice.id, permission: 'admin' })).status).toBe(201)
    }
    expect((await grant({ path: 'bob-home', user_id: bob.id, permission: 'full' })).status).toBe(201)
  })

  describe('POST /permissions', () => {
    it('lets a site admin grant a permission by username, normalizing the path', async () => {
      const r = await grant({ path: '/archive/2024/', username: 'CAROL', permission: 'readonly' })
      expect(r.status).toBe(201)
      expect(r.body).toEqual({
        id: r.body.id,
        path: 'archive/2024',
        user_id: carol.id,
        username: 'carol',
        group_id: null,
        group_name: null,
        permission: 'readonly',
        recursive: true,
      })
      const a = await lastAction('permission_create')
      expect(a.user_id).toBeNull()
      expect(a.username).toBeNull()
      expect(a.ip).toBe('127.0.0.1')
      expect(a.interface).toBe('restapi')
      expect(a.path).toBe('archive/2024')
      expect(JSON.parse(a.targets)).toEqual([
        { type: 'permission', id: r.body.id, name: 'readonly' },
        { type: 'user', id: carol.id, name: 'carol' },
      ])
    })

    it('defaults to full and accepts recursive: true', async () => {
      const r = await grant({ path: 'defaults', user_id: carol.id, recursive: true })
      expect(r.status).toBe(201)
      expect(r.body.permission).toBe('full')
    })

    it('takes an XML body and answers with the permission root', async () => {
      const r = await call(s, 'POST', '/permissions.xml', {
        key: s.adminKey,
        raw: `<permission><path>xml/folder</path><user_id type="integer">${carol.id}</user_id><permission>list</permission></permission>`,
        contentType: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<permission>\n  <id type="integer">')
      expect(r.text).toContain('<path>xml/folder</path>')
      expect(r.text).toContain('<group_id nil="true"/>')
      expect(r.text).toContain('<recursive type="boolean">true</recursive>')
    })

    it('lets a folder admin grant inside their folder, recording them as the actor', async () => {
      const session = await login(s, 'alice', alice.password)
      const r = await call(s, 'POST', '/permissions', {
        session,
        body: { path: 'Projects/apollo', user_id: carol.id, permission: 'writeonly' },
      })
      expect(r.status).toBe(201)
      expect(r.body.path).toBe('Projects/apollo')
      const a = await lastAction('permission_create')
      expect(a.user_id).toBe(alice.id)
      expect(a.username).toBe('alice')
      expect(a.interface).toBe('restapi')
    })

    it('refuses a folder admin outside their folders, even on a look-alike prefix', async () => {
      for (const path of ['elsewhere', 'projects-old/x', 'shared', 'shared/teamwork']) {
        const r = await grant({ path, user_id: carol.id, permission: 'readonly' }, aliceKey)
        expect(r.status).toBe(403)
        expect(r.body.type).toBe('not-authorized/folder-admin-permission-required')
      }
    })

    it('refuses users who administer no folder, bots included', async () => {
      for (const key of [bobKey, (await makeKey(s, bot.id)).key]) {
        const r = await grant({ path: 'bob-home/sub', user_id: carol.id, permission: 'readonly' }, key)
        expect(r.status).toBe(403)
        expect(r.body.type).toBe('not-authorized/folder-admin-permission-required')
      }
    })

    it('refuses a request without credentials', async () => {
      const r = await call(s, 'POST', '/permissions', { body: { path: 'x', user_id: carol.id } })
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })

    it('refuses a duplicate, also in another letter case', async () => {
      const body = { path: 'dupes/here', user_id: carol.id, permission: 'history' }
      expect((await grant(body)).status).toBe(201)
      for (const path of ['dupes/here', 'DUPES/here/']) {
        const r = await grant({ ...body, path })
        expect(r.status).toBe(422)
        expect(r.body.type).toBe('processing-failure/model-save-error')
        expect(Object.keys(r.body.model_errors)).toEqual(['permission'])
      }
      // Another permission type on the same folder is a different grant.
      expect((await grant({ ...body, permission: 'list' })).status).toBe(201)
    })

    it.each([
      ['an unknown permission', { path: 'a', permission: 'superuser' }, 'permission'],
      ['a non-recursive permission', { path: 'a', recursive: false }, 'recursive'],
      ['the root folder', { path: '/' }, 'path'],
    ])('refuses %s with 422', async (_what, body, field) => {
      const r = await grant({ user_id: carol.id, ...body })
      expect(r.status).toBe(422)
      expect(r.body.type).toBe('processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors)).toEqual([field])
    })

    it('refuses an unknown user with 404', async () => {
      for (const body of [{ user_id: 999_999 }, { username: 'nobody-here' }]) {
        const r = await grant({ path: 'a', ...body })
        expect(r.status).toBe(404)
        expect(r.body.type).toBe('not-found/user-not-found')
      }
    })

    it.each([
      ['a missing path', { user_id: 1 }, 'bad-request/request-params-required'],
      ['a missing user', { path: 'a' }, 'bad-request/request-params-required'],
      [
        'an unknown field',
        { path: 'a', user_id: 1, group_name: 'staff' },
        'bad-request/request-params-invalid',
      ],
      ['a non-integer user_id', { path: 'a', user_id: 'carol' }, 'bad-request/request-params-invalid'],
      [
        'a wrongly typed recursive',
        { path: 'a', user_id: 1, recursive: 'always' },
        'bad-request/request-params-invalid',
      ],
      ['a path with ..', { path: 'a/../b', user_id: 1 }, 'bad-request/invalid-path'],
      ['a path starting with ..', { path: '../etc', user_id: 1 }, 'bad-request/invalid-path'],
      ['a path with a control character', { path: 'a\u0001b', user_id: 1 }, 'bad-request/invalid-path'],
      [
        'a 10,000-character path',
        { path: 'p'.repeat(10_000), user_id: 1 },
        'bad-request/request-params-invalid',
      ],
      [
        'a 10,000-character permission',
        { path: 'a', user_id: 1, permission: 'x'.repeat(10_000) },
        'bad-request/request-params-invalid',
      ],
    ])('refuses %s with 400', async (_what, body, type) => {
      const r = await grant(body)
      expect(r.status).toBe(400)
      expect(r.body.type).toBe(type)
    })

    it('refuses a path over 5000 characters with 422 path-too-long', async () => {
      const r = await grant({ path: `a/${'b'.repeat(5000)}`, user_id: carol.id })
      expect(r.status).toBe(422)
      expect(r.body.type).toBe('processing-failure/path-too-long')
    })

    it('refuses malformed JSON', async () => {
      const r = await call(s, 'POST', '/permissions', {
        key: s.adminKey,
        raw: '{"path": "a", ',
        contentType: 'application/json',
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
    })
  })

  describe('GET /permissions', () => {
    let owners: Record<string, TestUser>
    let ownerKeys: Record<string, string>
    const listed = useServer(dialect)
    beforeAll(async () => {
      owners = {}
      ownerKeys = {}
      for (const name of ['dana', 'eve', 'fay']) {
        owners[name] = await makeUser(listed, { username: name })
        ownerKeys[name] = (await makeKey(listed, owners[name]!.id)).key
      }
      const rows: [string, string, string][] = [
        ['dana', 'clients', 'admin'],
        ['eve', 'clients/acme', 'readonly'],
        ['eve', 'clients/acme/invoices', 'writeonly'],
        ['fay', 'clients_old', 'full'],
        ['fay', 'internal', 'full'],
        ['eve', 'internal/hr', 'list'],
        ['dana', 'team_x', 'admin'],
        ['fay', 'teamax/docs', 'full'],
      ]
      for (const [user, path, permission] of rows) {
        const r = await call(listed, 'POST', '/permissions', {
          key: listed.adminKey,
          body: { path, username: user, permission },
        })
        expect(r.status).toBe(201)
      }
    })

    const paths = (r: { body: any[] }) => r.body.map((p) => `${p.username}:${p.path}:${p.permission}`)

    it('shows a site admin every permission, page by page', async () => {
      const seen: string[] = []
      let cursor: string | null = null
      let pagesRead = 0
      do {
        const q = `/permissions?per_page=2&sort_by[path]=asc${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const r = await call(listed, 'GET', q, { key: listed.adminKey })
        expect(r.status).toBe(200)
        expect(r.body.length).toBeLessThanOrEqual(2)
        seen.push(...paths(r))
        cursor = r.headers.get('X-Service-Cursor-Next')
        pagesRead++
      } while (cursor && pagesRead < 10)
      expect(pagesRead).toBe(4)
      expect(seen).toEqual([
        'dana:clients:admin',
        'eve:clients/acme:readonly',
        'eve:clients/acme/invoices:writeonly',
        'fay:clients_old:full',
        'fay:internal:full',
        'eve:internal/hr:list',
        'dana:team_x:admin',
        'fay:teamax/docs:full',
      ])
    })

    it('shows a folder admin the permissions inside their folders and their own', async () => {
      const r = await call(listed, 'GET', '/permissions?sort_by[path]=asc', { key: ownerKeys['dana'] })
      expect(r.status).toBe(200)
      // clients_old is not inside clients, and teamax/docs is not inside team_x (`_` is no wildcard).
      expect(paths(r)).toEqual([
        'dana:clients:admin',
        'eve:clients/acme:readonly',
        'eve:clients/acme/invoices:writeonly',
        'dana:team_x:admin',
      ])
    })

    it('shows anyone else only their own', async () => {
      const r = await call(listed, 'GET', '/permissions?sort_by[path]=asc', { key: ownerKeys['eve'] })
      expect(paths(r)).toEqual([
        'eve:clients/acme:readonly',
        'eve:clients/acme/invoices:writeonly',
        'eve:internal/hr:list',
      ])
    })

    it('narrows to the permissions that apply to a path, from above included', async () => {
      const r = await call(
        listed,
        'GET',
        '/permissions?path=/Clients/acme/invoices/2024/&sort_by[path]=asc',
        { key: listed.adminKey },
      )
      expect(paths(r)).toEqual([
        'dana:clients:admin',
        'eve:clients/acme:readonly',
        'eve:clients/acme/invoices:writeonly',
      ])
    })

    it('narrows to one user, and filters and sorts by the listed fields', async () => {
      let r = await call(listed, 'GET', `/permissions?user_id=${owners['fay']!.id}&sort_by[path]=desc`, {
        key: listed.adminKey,
      })
      expect(paths(r)).toEqual(['fay:teamax/docs:full', 'fay:internal:full', 'fay:clients_old:full'])
      r = await call(listed, 'GET', '/permissions?user_id=0', { key: ownerKeys['fay'] })
      expect(paths(r)).toEqual(['fay:clients_old:full', 'fay:internal:full', 'fay:teamax/docs:full'])
      r = await call(listed, 'GET', '/permissions?filter[permission]=admin', { key: listed.adminKey })
      expect(paths(r)).toEqual(['dana:clients:admin', 'dana:team_x:admin'])
      r = await call(listed, 'GET', '/permissions?filter_like[path]=clients/%25&sort_by[permission]=desc', {
        key: listed.adminKey,
      })
      expect(paths(r)).toEqual(['eve:clients/acme/invoices:writeonly', 'eve:clients/acme:readonly'])
      r = await call(listed, 'GET', `/permissions?filter[user_id]=${owners['dana']!.id}`, {
        key: listed.adminKey,
      })
      expect(paths(r)).toEqual(['dana:clients:admin', 'dana:team_x:admin'])
    })

    it('lets a folder admin narrow to another user within their folders', async () => {
      const r = await call(listed, 'GET', `/permissions?user_id=${owners['eve']!.id}`, {
        key: ownerKeys['dana'],
      })
      expect(paths(r)).toEqual(['eve:clients/acme:readonly', 'eve:clients/acme/invoices:writeonly'])
    })

    it('refuses a user who administers nothing asking for another user', async () => {
      const r = await call(listed, 'GET', `/permissions?user_id=${owners['fay']!.id}`, {
        key: ownerKeys['eve'],
      })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/folder-admin-permission-required')
    })

    it('answers the list in XML', async () => {
      const r = await call(listed, 'GET', '/permissions?per_page=1', {
        key: listed.adminKey,
        accept: 'application/xml',
      })
      expect(r.status).toBe(200)
      expect(r.text).toContain('<permissions type="array">\n  <permission>')
      expect(r.headers.get('X-Files-Cursor-Next')).toBeTruthy()
    })

    it.each([
      ['an unknown sort field', 'sort_by[username]=asc', 'bad-request/invalid-filter-field'],
      ['an unknown filter field', 'filter[username]=eve', 'bad-request/invalid-filter-field'],
      ['a non-numeric user_id', 'user_id=eve', 'bad-request/request-params-invalid'],
      ['an unknown parameter', 'include_groups=1', 'bad-request/request-params-invalid'],
      ['a path with ..', 'path=a/../b', 'bad-request/invalid-path'],
      ['a forged cursor', 'cursor=abc.def', 'bad-request/invalid-cursor'],
    ])('refuses %s', async (_what, query, type) => {
      const r = await call(listed, 'GET', `/permissions?${query}`, { key: listed.adminKey })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe(type)
    })

    it('refuses a list without credentials', async () => {
      const r = await call(listed, 'GET', '/permissions')
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })

    it('reports the folders a user administers, outermost only', async () => {
      const db = listed.container.db
      const siteId = listed.container.site.id
      const dana = owners['dana']!
      const add = (path: string) =>
        db
          .insertInto('permissions')
          .values({ site_id: siteId, user_id: dana.id, path, permission: 'admin', created_at: Date.now() })
          .execute()
      await add('clients/acme')
      await add('zeta')
      expect(await adminFolders(db, siteId, dana.id)).toEqual(['zeta', 'team_x', 'clients'])
      expect(await adminFolders(db, siteId, owners['eve']!.id)).toEqual([])
    })
  })

  describe('DELETE /permissions/{id}', () => {
    const create = async (path: string, user = carol) => {
      const r = await grant({ path, user_id: user.id, permission: 'readonly' })
      expect(r.status).toBe(201)
      return r.body.id as number
    }

    it('lets a site admin remove a permission, recording permission_destroy', async () => {
      const id = await create('to-remove')
      const r = await call(s, 'DELETE', `/permissions/${id}`, { key: s.adminKey, body: { id } })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      const gone = await s.container.db
        .selectFrom('permissions')
        .select('id')
        .where('id', '=', id)
        .executeTakeFirst()
      expect(gone).toBeUndefined()
      const a = await lastAction('permission_destroy')
      expect(a.user_id).toBeNull()
      expect(a.ip).toBe('127.0.0.1')
      expect(a.interface).toBe('restapi')
      expect(a.path).toBe('to-remove')
      expect(JSON.parse(a.targets)).toEqual([
        { type: 'permission', id, name: 'readonly' },
        { type: 'user', id: carol.id, name: 'carol' },
      ])
    })

    it('lets a folder admin remove inside their folder, and only there', async () => {
      const inside = await create('shared/team/docs')
      const outside = await create('shared/other')
      let r = await call(s, 'DELETE', `/permissions/${outside}`, { key: aliceKey })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/folder-admin-permission-required')
      r = await call(s, 'DELETE', `/permissions/${inside}`, { key: aliceKey })
      expect(r.status).toBe(204)
      const a = await lastAction('permission_destroy')
      expect(a.user_id).toBe(alice.id)
      expect(a.username).toBe('alice')
    })

    it('refuses users who administer no folder, even on their own permission', async () => {
      const own = await s.container.db
        .selectFrom('permissions')
        .select('id')
        .where('user_id', '=', bob.id)
        .executeTakeFirstOrThrow()
      const r = await call(s, 'DELETE', `/permissions/${own.id}`, { key: bobKey })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/folder-admin-permission-required')
    })

    it('answers 404 for an unknown id, 400 for a mismatched body id, 401 without credentials', async () => {
      let r = await call(s, 'DELETE', '/permissions/999999', { key: s.adminKey })
      expect(r.status).toBe(404)
      expect(r.body.type).toBe('not-found')
      const id = await create('kept')
      r = await call(s, 'DELETE', `/permissions/${id}`, { key: s.adminKey, body: { id: id + 1 } })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(s, 'DELETE', `/permissions/${id}`)
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })

    it('goes with the user when the user is deleted', async () => {
      const dropped = await makeUser(s)
      const id = await create('transient', dropped)
      expect((await call(s, 'DELETE', `/users/${dropped.id}`, { key: s.adminKey })).status).toBe(204)
      const row = await s.container.db
        .selectFrom('permissions')
        .select('id')
        .where('id', '=', id)
        .executeTakeFirst()
      expect(row).toBeUndefined()
    })
  })
})
