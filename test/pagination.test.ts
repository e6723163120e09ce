import { beforeAll, describe, expect, it } from 'vitest'
import type { ListSpec } from '../src/api/list-spec.js'
import { parseListQuery, toPage } from '../src/db/list-cursor.js'
import { pageInMemory } from '../src/db/list-in-memory.js'
import { applyListQuery } from '../src/db/list-sql.js'
import { setCursorHeaders } from '../src/http/pagination.js'
import { call, dialects, makeKey, makeUser, useServer } from './helpers/server.js'

const DAY = 86_400_000

/** A character-flipped copy of a cursor, away from its ends. */
function tamper(cursor: string, at = 5): string {
  const c = cursor[at]!
  return cursor.slice(0, at) + (c === 'A' ? 'B' : 'A') + cursor.slice(at + 1)
}

describe.each(dialects)('pagination, sorting and filtering of GET /api_keys (%s)', (dialect) => {
  let owner: number
  /** Key ids in creation order, with their expiry (ms) or null. */
  let keys: { id: number; expires: number | null }[]
  const base = Date.UTC(2040, 0, 1)

  const s = useServer(dialect)
  beforeAll(async () => {
    owner = (await makeUser(s)).id
    keys = []
    // 25 keys: every fourth never expires; expiries repeat so that ties need the id to break them.
    for (let i = 0; i < 25; i++) {
      const expires = i % 4 === 3 ? null : base + ((i * 7) % 5) * DAY
      const k = await makeKey(s, owner, {
        name: `page-${i}`,
        ...(expires === null ? {} : { expires_at: new Date(expires).toISOString() }),
      })
      keys.push({ id: k.id, expires })
    }
  })

  const list = (query: string) =>
    call(s, 'GET', `/api_keys?user_id=${owner}${query ? `&${query}` : ''}`, { key: s.adminKey })

  /** Follows X-Service-Cursor-Next from the first page; returns the ids of each page and every response. */
  async function walk(query: string) {
    const pages: number[][] = []
    const responses = []
    let r = await list(query)
    for (;;) {
      expect(r.status).toBe(200)
      responses.push(r)
      pages.push(r.body.map((k: { id: number }) => k.id))
      const next = r.headers.get('x-service-cursor-next')
      if (!next) break
      expect(pages.length).toBeLessThan(30)
      r = await list(`${query}&cursor=${encodeURIComponent(next)}`)
    }
    return { pages, responses }
  }

  const byExpiry = (dir: 'asc' | 'desc') => {
    const NEVER = Number.MAX_SAFE_INTEGER
    const sorted = [...keys].sort((a, b) => (a.expires ?? NEVER) - (b.expires ?? NEVER) || a.id - b.id)
    return (dir === 'asc' ? sorted : sorted.reverse()).map((k) => k.id)
  }

  it('returns every key on one page by default, with no cursor header', async () => {
    const r = await list('')
    expect(r.status).toBe(200)
    expect(r.body.map((k: { id: number }) => k.id)).toEqual(keys.map((k) => k.id))
    for (const h of [
      'x-service-cursor-next',
      'x-files-cursor-next',
      'x-files-cursor',
      'x-service-cursor-prev',
      'x-files-cursor-prev',
    ]) {
      expect(r.headers.get(h)).toBeNull()
    }
  })

  it('pages with per_page, visiting every key exactly once and ending without a cursor', async () => {
    const { pages, responses } = await walk('per_page=10')
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5])
    expect(pages.flat()).toEqual(keys.map((k) => k.id))
    for (const r of responses.slice(0, -1)) {
      const next = r.headers.get('x-service-cursor-next')
      expect(next).toBeTruthy()
      expect(r.headers.get('x-files-cursor-next')).toBe(next)
      expect(r.headers.get('x-files-cursor')).toBe(next)
    }
    const last = responses.at(-1)!
    expect(last.headers.get('x-service-cursor-next')).toBeNull()
    expect(last.headers.get('x-files-cursor-next')).toBeNull()
    expect(last.headers.get('x-files-cursor')).toBeNull()
    // The first page has no previous page; the later ones do, under both names.
    expect(responses[0]!.headers.get('x-service-cursor-prev')).toBeNull()
    for (const r of responses.slice(1)) {
      expect(r.headers.get('x-service-cursor-prev')).toBeTruthy()
      expect(r.headers.get('x-files-cursor-prev')).toBe(r.headers.get('x-service-cursor-prev'))
    }
  })

  it('goes back to the previous page exactly with the prev cursor', async () => {
    const { pages, responses } = await walk('per_page=10')
    for (let i = 1; i < responses.length; i++) {
      const prev = responses[i]!.headers.get('x-service-cursor-prev')!
      const back = await list(`per_page=10&cursor=${encodeURIComponent(prev)}`)
      expect(back.status).toBe(200)
      expect(back.body.map((k: { id: number }) => k.id)).toEqual(pages[i - 1])
      // From the first page reached backwards there is no earlier page, but there is a next one.
      if (i === 1) expect(back.headers.get('x-service-cursor-prev')).toBeNull()
      const fwd = back.headers.get('x-service-cursor-next')!
      const again = await list(`per_page=10&cursor=${encodeURIComponent(fwd)}`)
      expect(again.body.map((k: { id: number }) => k.id)).toEqual(pages[i])
    }
  })

  it('sends the Files.com cursor header names that the SDKs read, case-insensitively', async () => {
    const r = await list('per_page=24')
    expect(r.headers.get('X-Files-Cursor')).toBe(r.headers.get('X-Service-Cursor-Next'))
    const rest = await list(`per_page=24&cursor=${encodeURIComponent(r.headers.get('X-Files-Cursor')!)}`)
    expect(rest.body).toHaveLength(1)
    expect(rest.headers.get('X-Files-Cursor')).toBeNull()
  })

  it('accepts and ignores the page parameter of the Files.com SDK', async () => {
    const plain = await list('per_page=10')
    const paged = await list('per_page=10&page=3')
    expect(paged.status).toBe(200)
    expect(paged.body).toEqual(plain.body)
    const next = plain.headers.get('x-service-cursor-next')!
    const second = await list(`per_page=10&page=2&cursor=${encodeURIComponent(next)}`)
    expect(second.status).toBe(200)
    expect(second.body.map((k: { id: number }) => k.id)).toEqual(keys.slice(10, 20).map((k) => k.id))
  })

  it('refuses per_page outside 1..10000 or not a whole number', async () => {
    for (const v of ['0', '-1', '10001', 'abc', '1.5', '1e3', ' ', '99999999999999999999']) {
      const r = await list(`per_page=${encodeURIComponent(v)}`)
      expect(r.status, `per_page=${v}`).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
    }
    const twice = await list('per_page=1&per_page=2')
    expect(twice.status).toBe(400)
    expect(twice.body.type).toBe('bad-request/request-params-invalid')
  })

  it('accepts per_page at the maximum of 10000 and at 1', async () => {
    const max = await list('per_page=10000')
    expect(max.status).toBe(200)
    expect(max.body).toHaveLength(25)
    expect(max.headers.get('x-service-cursor-next')).toBeNull()
    const one = await list('per_page=1')
    expect(one.body).toHaveLength(1)
    expect(one.headers.get('x-service-cursor-next')).toBeTruthy()
  })

  it('refuses a tampered, truncated or made-up cursor', async () => {
    const r = await list('per_page=10')
    const next = r.headers.get('x-service-cursor-next')!
    const dot = next.indexOf('.')
    for (const bad of [
      tamper(next, 3),
      tamper(next, dot + 3),
      next.slice(0, -1),
      next.slice(0, dot),
      `${next}.x`,
      'garbage',
      Buffer.from(JSON.stringify({ b: 'x', s: 'id:asc', d: 'n', k: [0] })).toString('base64url'),
    ]) {
      const t = await list(`per_page=10&cursor=${encodeURIComponent(bad)}`)
      expect(t.status, bad).toBe(400)
      expect(t.body.type).toBe('bad-request/invalid-cursor')
    }
  })

  it('binds a cursor to the query it came from', async () => {
    const r = await list('per_page=5&filter_gteq[expires_at]=2040-01-01')
    const next = r.headers.get('x-service-cursor-next')!
    expect(next).toBeTruthy()
    // The same query accepts it…
    const same = await list(
      `per_page=5&filter_gteq[expires_at]=2040-01-01&cursor=${encodeURIComponent(next)}`,
    )
    expect(same.status).toBe(200)
    // …another filter value, no filter or another user does not.
    for (const q of ['per_page=5&filter_gteq[expires_at]=2040-01-02', 'per_page=5']) {
      const t = await list(`${q}&cursor=${encodeURIComponent(next)}`)
      expect(t.status).toBe(400)
      expect(t.body.type).toBe('bad-request/invalid-cursor')
    }
    const other = await call(
      s,
      'GET',
      `/api_keys?per_page=5&filter_gteq[expires_at]=2040-01-01&cursor=${encodeURIComponent(next)}`,
      {
        key: s.adminKey,
      },
    )
    expect(other.status).toBe(400)
    expect(other.body.type).toBe('bad-request/invalid-cursor')
    // per_page is not part of the binding: a client may change its page size midway.
    const bigger = await list(
      `per_page=50&filter_gteq[expires_at]=2040-01-01&cursor=${encodeURIComponent(next)}`,
    )
    expect(bigger.status).toBe(200)
  })

  it('refuses a cursor from another sort order with invalid-cursor-type-for-sort', async () => {
    const asc = await list('per_page=5&sort_by[expires_at]=asc')
    const next = asc.headers.get('x-service-cursor-next')!
    for (const q of ['sort_by[expires_at]=desc', '']) {
      const r = await list(`per_page=5&${q}&cursor=${encodeURIComponent(next)}`)
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-cursor-type-for-sort')
    }
    const plain = await list('per_page=5')
    const r = await list(
      `per_page=5&sort_by[expires_at]=asc&cursor=${encodeURIComponent(plain.headers.get('x-service-cursor-next')!)}`,
    )
    expect(r.status).toBe(400)
    expect(r.body.type).toBe('bad-request/invalid-cursor-type-for-sort')
  })

  for (const dir of ['asc', 'desc'] as const) {
    it(`sorts by expires_at ${dir}, never-expiring keys ${dir === 'asc' ? 'last' : 'first'}, stably across pages`, async () => {
      const expected = byExpiry(dir)
      const whole = await list(`sort_by[expires_at]=${dir}`)
      expect(whole.body.map((k: { id: number }) => k.id)).toEqual(expected)
      for (const per of [1, 3, 4, 7]) {
        const { pages, responses } = await walk(`per_page=${per}&sort_by[expires_at]=${dir}`)
        expect(pages.flat(), `per_page=${per}`).toEqual(expected)
        // Walking back from the last page retraces the same pages.
        let prev = responses.at(-1)!.headers.get('x-service-cursor-prev')
        for (let i = pages.length - 2; i >= 0; i--) {
          const back = await list(
            `per_page=${per}&sort_by[expires_at]=${dir}&cursor=${encodeURIComponent(prev!)}`,
          )
          expect(back.body.map((k: { id: number }) => k.id)).toEqual(pages[i])
          prev = back.headers.get('x-service-cursor-prev')
        }
        expect(prev).toBeNull()
      }
      const nulls = whole.body.filter((k: { expires_at: string | null }) => k.expires_at === null)
      expect(nulls).toHaveLength(6)
      if (dir === 'asc') expect(whole.body.slice(-6)).toEqual(nulls)
      else expect(whole.body.slice(0, 6)).toEqual(nulls)
    })
  }

  it('accepts the nested sort_by form and upper-case directions', async () => {
    const r = await list('sort_by[expires_at]=DESC')
    expect(r.status).toBe(200)
    expect(r.body.map((k: { id: number }) => k.id)).toEqual(byExpiry('desc'))
  })

  it('filters expires_at with gt, gteq, lt, lteq and equality, leaving never-expiring keys out', async () => {
    const at = (d: number) => new Date(base + d * DAY).toISOString()
    const ids = (pred: (e: number) => boolean) =>
      keys.filter((k) => k.expires !== null && pred(k.expires)).map((k) => k.id)
    const cases: [string, number[]][] = [
      [`filter_gt[expires_at]=${at(2)}`, ids((e) => e > base + 2 * DAY)],
      [`filter_gteq[expires_at]=${at(2)}`, ids((e) => e >= base + 2 * DAY)],
      [`filter_lt[expires_at]=${at(2)}`, ids((e) => e < base + 2 * DAY)],
      [`filter_lteq[expires_at]=${at(2)}`, ids((e) => e <= base + 2 * DAY)],
      [`filter[expires_at]=${at(3)}`, ids((e) => e === base + 3 * DAY)],
      [
        `filter_gteq[expires_at]=2040-01-02&filter_lt[expires_at]=2040-01-04`,
        ids((e) => e >= base + DAY && e < base + 3 * DAY),
      ],
      // A date alone is midnight UTC; an offset is honoured.
      ['filter_lt[expires_at]=2040-01-02', ids((e) => e < base + DAY)],
      ['filter_lteq[expires_at]=2040-01-02T01:00:00%2B01:00', ids((e) => e <= base + DAY)],
    ]
    for (const [q, expected] of cases) {
      const r = await list(q)
      expect(r.status, q).toBe(200)
      expect(expected.length, q).toBeGreaterThan(0)
      expect(
        r.body.map((k: { id: number }) => k.id),
        q,
      ).toEqual(expected)
    }
  })

  it('pages through a filtered, sorted list', async () => {
    const q = `filter_gteq[expires_at]=2040-01-02&sort_by[expires_at]=desc&per_page=3`
    const expected = byExpiry('desc').filter((id) => {
      const e = keys.find((k) => k.id === id)!.expires
      return e !== null && e >= base + DAY
    })
    const { pages } = await walk(q)
    expect(pages.flat()).toEqual(expected)
  })

  it('refuses an unparseable date in a filter', async () => {
    for (const v of ['soon', '2040-02-30', '2040-01-01T25:00']) {
      const r = await list(`filter_gt[expires_at]=${v}`)
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/datetime-parse')
    }
  })

  it('refuses unknown filter and sort fields', async () => {
    for (const q of [
      'sort_by[name]=asc',
      'filter[name]=x',
      'filter_gt[id]=3',
      'filter_like[path]=a%',
      'sort_by[]=asc',
    ]) {
      const r = await list(q)
      expect(r.status, q).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-filter-field')
    }
  })

  it('refuses filter_like and filter_prefix on a date', async () => {
    const like = await list('filter_like[expires_at]=2040%25')
    expect(like.status).toBe(400)
    expect(like.body.type).toBe('bad-request/invalid-filter-combination')
    const prefix = await list('filter_prefix[expires_at]=2040')
    expect(prefix.status).toBe(400)
    expect(prefix.body.type).toBe('bad-request/invalid-filter-combination')
    const unknown = await list('filter_prefix[name]=a')
    expect(unknown.status).toBe(400)
    expect(unknown.body.type).toBe('bad-request/invalid-filter-field')
  })

  it('refuses a bad sort direction and unknown parameters', async () => {
    const dir = await list('sort_by[expires_at]=up')
    expect(dir.status).toBe(400)
    expect(dir.body.type).toBe('bad-request/request-params-invalid')
    const unknown = await list('colour=blue')
    expect(unknown.status).toBe(400)
    expect(unknown.body.type).toBe('bad-request/request-params-invalid')
  })
})

describe.each(dialects)('filter_like and list helpers on a real database (%s)', (dialect) => {
  const prefix = `lk${Date.now().toString(36)}`
  const names = [
    `${prefix}_alpha`,
    `${prefix}xalpha`,
    `${prefix.toUpperCase()}_ALPHA_2`,
    `${prefix}_beta`,
    `${prefix}%gamma`,
    `${prefix}\\delta`,
  ]
  const ids: Record<string, number> = {}
  const USERS: ListSpec = {
    name: 'test-users',
    idColumn: 'users.id',
    sort: { username: { column: 'users.username', type: 'string' } },
    filter: { username: { column: 'users.username', type: 'string' } },
  }

  const s = useServer(dialect)
  beforeAll(async () => {
    for (const n of names) ids[n] = (await makeUser(s, { username: n })).id
  })

  async function usernames(query: Record<string, unknown>) {
    const secret = s.container.site.signing_secret
    const lq = parseListQuery(USERS, query, secret)
    const q = s.container.db
      .selectFrom('users')
      .select(['users.id', 'users.username'])
      .where('site_id', '=', s.container.site.id)
    const rows = await applyListQuery(q, USERS, lq).execute()
    return toPage(rows, USERS, lq, secret)
  }
  const namesOf = async (query: Record<string, unknown>) =>
    (await usernames(query)).items.map((r) => r.username).sort()

  it('treats % as a wildcard, case-insensitively', async () => {
    expect(await namesOf({ 'filter_like[username]': `${prefix}%` })).toEqual([...names].sort())
    expect(await namesOf({ 'filter_like[username]': `%ALPHA%` })).toEqual(
      [`${prefix}_alpha`, `${prefix}xalpha`, `${prefix.toUpperCase()}_ALPHA_2`].sort(),
    )
    expect(await namesOf({ 'filter_like[username]': `%a_2` })).toEqual([`${prefix.toUpperCase()}_ALPHA_2`])
  })

  it('without a wildcard, equals case-insensitively', async () => {
    expect(await namesOf({ 'filter_like[username]': `${prefix.toUpperCase()}_BETA` })).toEqual([
      `${prefix}_beta`,
    ])
    expect(await namesOf({ 'filter_like[username]': `${prefix}_bet` })).toEqual([])
  })

  it('takes _ literally, not as a one-character wildcard', async () => {
    // `_alpha` must not match `xalpha`.
    expect(await namesOf({ 'filter_like[username]': `${prefix}_alpha` })).toEqual([`${prefix}_alpha`])
    expect(await namesOf({ 'filter_like[username]': `${prefix}_alpha%` })).toEqual(
      [`${prefix}_alpha`, `${prefix.toUpperCase()}_ALPHA_2`].sort(),
    )
  })

  it('takes % in the value as a wildcard even where the name holds one, and \\ literally', async () => {
    expect(await namesOf({ 'filter_like[username]': `${prefix}%gamma` })).toEqual([`${prefix}%gamma`])
    expect(await namesOf({ 'filter_like[username]': `${prefix}\\D%` })).toEqual([`${prefix}\\delta`])
    expect(await namesOf({ 'filter_like[username]': `${prefix}\\DELTA` })).toEqual([`${prefix}\\delta`])
    expect(await namesOf({ 'filter_like[username]': `${prefix}\\%x` })).toEqual([])
    expect(await namesOf({ 'filter_like[username]': `${prefix}\\` })).toEqual([])
  })

  it('filter_prefix matches a prefix case-insensitively, taking %, _ and \\ literally, in SQL and in memory', async () => {
    const cases: [string, string[]][] = [
      [prefix, names],
      [`${prefix.toUpperCase()}_ALPHA`, [`${prefix}_alpha`, `${prefix.toUpperCase()}_ALPHA_2`]],
      // `_` is no one-character wildcard: `xalpha` stays out.
      [`${prefix}_`, [`${prefix}_alpha`, `${prefix.toUpperCase()}_ALPHA_2`, `${prefix}_beta`]],
      // `%` is no wildcard: only the name that holds one.
      [`${prefix}%`, [`${prefix}%gamma`]],
      [`${prefix}%g`, [`${prefix}%gamma`]],
      [`${prefix}%a`, []],
      [`${prefix}\\D`, [`${prefix}\\delta`]],
      [`${prefix}\\`, [`${prefix}\\delta`]],
      [`${prefix}_alpha_2`, [`${prefix.toUpperCase()}_ALPHA_2`]],
      [`${prefix}_alpha_2x`, []],
      ['', names],
    ]
    const rows = (
      await s.container.db
        .selectFrom('users')
        .select(['users.id', 'users.username'])
        .where('site_id', '=', s.container.site.id)
        .execute()
    ).map((r) => ({ ...r, 'users.id': r.id, 'users.username': r.username }))
    for (const [value, expected] of cases) {
      const query = { 'filter_prefix[username]': value, 'filter_like[username]': `${prefix}%` }
      expect(await namesOf(query), value).toEqual([...expected].sort())
      const lq = parseListQuery(USERS, query, 'x')
      const inMemory = pageInMemory(rows, USERS, lq, 'x').items.map((r) => r.username)
      expect(inMemory.sort(), `${value} (in memory)`).toEqual([...expected].sort())
    }
    // The nested form too.
    expect(await namesOf({ filter_prefix: { username: `${prefix}_B` } })).toEqual([`${prefix}_beta`])
  })

  it('refuses two sort fields at once', () => {
    const two: ListSpec = { ...USERS, sort: { ...USERS.sort, id: { column: 'users.id', type: 'integer' } } }
    expect(() => parseListQuery(two, { 'sort_by[username]': 'asc', 'sort_by[id]': 'desc' }, 'x')).toThrow(
      expect.objectContaining({ type: 'bad-request/invalid-filter-combination' }),
    )
  })

  it('filters strings for equality case-insensitively', async () => {
    expect(await namesOf({ 'filter[username]': `${prefix.toUpperCase()}_BETA` })).toEqual([`${prefix}_beta`])
    expect(await namesOf({ filter: { username: `${prefix}_Alpha` } })).toEqual([`${prefix}_alpha`])
  })

  it('sorts and pages by a text field with cursors', async () => {
    const secret = s.container.site.signing_secret
    const seen: string[] = []
    let query: Record<string, unknown> = {
      'filter_like[username]': `${prefix}%`,
      'sort_by[username]': 'desc',
      per_page: '2',
    }
    for (let i = 0; i < 5; i++) {
      const page = await usernames(query)
      seen.push(...page.items.map((r) => r.username))
      if (!page.next) break
      query = { ...query, cursor: page.next }
    }
    const expected = (
      await s.container.db
        .selectFrom('users')
        .select('username')
        .where('username', 'in', names)
        .orderBy('username', 'desc')
        .orderBy('id', 'desc')
        .execute()
    ).map((r) => r.username)
    expect(seen).toEqual(expected)
    expect(secret).toBeTruthy()
  })

  it('refuses a cursor of another list', async () => {
    const page = await usernames({ per_page: '1' })
    expect(page.next).toBeTruthy()
    const other: ListSpec = { ...USERS, name: 'other-list' }
    expect(() => parseListQuery(other, { cursor: page.next }, s.container.site.signing_secret)).toThrow(
      expect.objectContaining({ type: 'bad-request/invalid-cursor' }),
    )
    expect(() => parseListQuery(USERS, { cursor: page.next }, 'another-secret')).toThrow(
      expect.objectContaining({ type: 'bad-request/invalid-cursor' }),
    )
  })

  it('never hands out a previous-page cursor on a forward-only list', async () => {
    const fwd: ListSpec = { ...USERS, name: 'forward', forwardOnly: true }
    const secret = s.container.site.signing_secret
    const first = parseListQuery(fwd, { per_page: '1' }, secret)
    const q = () => s.container.db.selectFrom('users').select(['users.id', 'users.username'])
    const p1 = toPage(await applyListQuery(q(), fwd, first).execute(), fwd, first, secret)
    const second = parseListQuery(fwd, { per_page: '1', cursor: p1.next }, secret)
    const p2 = toPage(await applyListQuery(q(), fwd, second).execute(), fwd, second, secret)
    expect(p2.next).toBeTruthy()
    expect(p2.prev).toBeNull()
    const headers: Record<string, string> = {}
    setCursorHeaders({ header: (k: string, v: string) => (headers[k] = v) } as any, p2)
    expect(Object.keys(headers).sort()).toEqual([
      'X-Files-Cursor',
      'X-Files-Cursor-Next',
      'X-Service-Cursor-Next',
    ])
  })
})
