import fs from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

/**
 * `wharf behaviors list|export`, run as operators run them, on a real data folder: the behaviors
 * as the API shows them, a webhook's secrets hidden.
 */
type CsvRow = Record<string, string>

let servers: ServerProcesses
const sites: ProcessSite[] = []

beforeAll(() => {
  servers = serverProcesses()
})

afterAll(async () => {
  for (const s of sites) await s.remove()
})

describe.each(dialects)('wharf behaviors (%s)', (dialect) => {
  let site: ProcessSite
  const ids: Record<string, number> = {}
  beforeAll(async () => {
    site = await processSite(servers, dialect)
    sites.push(site)
    const { id: siteId } = await site.db.db.selectFrom('sites').select('id').executeTakeFirstOrThrow()
    const add = async (
      key: string,
      p: string,
      behavior: string,
      value: unknown,
      more: { name?: string; description?: string; recursive?: number; disable?: number } = {},
    ) => {
      const row = await site.db.db
        .insertInto('behaviors')
        .values({
          site_id: siteId,
          path: p,
          path_lower: p.toLowerCase(),
          behavior,
          value: JSON.stringify(value),
          name: more.name ?? null,
          description: more.description ?? null,
          recursive: more.recursive ?? 0,
          disable_parent_folder_behavior: more.disable ?? 0,
          created_at: Date.now(),
          updated_at: Date.now(),
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      ids[key] = row.id
    }
    await add(
      'ext',
      'Projects',
      'limit_file_extensions',
      { extensions: ['csv'], mode: 'allow' },
      {
        name: 'CSV only',
        description: 'Reports, "quoted", two\nlines',
        recursive: 1,
      },
    )
    await add('len', 'Projects/Q1', 'limit_filename_length', { max_length: 40 }, { disable: 1 })
    // A webhook as the server stores one: its header values and token must never be printed.
    await add('hook', 'Inbox', 'webhook', {
      urls: ['https://hooks.example.com/in'],
      method: 'POST',
      encoding: 'JSON',
      headers: { Authorization: 'Bearer header-secret-1' },
      verification_token: 'token-secret-1',
    })
  }, 60_000)

  const wharf = (args: string[]) => servers.wharf(args, site.env())
  const out = async (args: string[]) => (await wharf(args)).stdout
  const refused = async (args: string[]) => {
    try {
      await wharf(args)
    } catch (err) {
      const e = err as { code: number; stderr: string }
      return { code: e.code, stderr: e.stderr }
    }
    throw new Error(`wharf ${args.join(' ')} succeeded`)
  }

  it('lists every behavior as JSON, sorted by type, with the webhook’s secrets hidden', async () => {
    const all = JSON.parse(await out(['behaviors', 'list', '--format', 'json']))
    expect(all.map((b: { behavior: string }) => b.behavior)).toEqual([
      'limit_file_extensions',
      'limit_filename_length',
      'webhook',
    ])
    expect(all[0]).toEqual({
      id: ids['ext'],
      path: 'Projects',
      attachment_url: null,
      behavior: 'limit_file_extensions',
      name: 'CSV only',
      description: 'Reports, "quoted", two\nlines',
      value: { extensions: ['csv'], mode: 'allow' },
      disable_parent_folder_behavior: false,
      recursive: true,
    })
    expect(all[2].value).toEqual({
      urls: ['https://hooks.example.com/in'],
      method: 'POST',
      encoding: 'JSON',
      headers: { Authorization: null },
      verification_token: null,
    })
  })

  it('filters by folder and by type', async () => {
    const onQ1 = JSON.parse(await out(['behaviors', 'list', '--path', '/projects/q1/', '--format', 'json']))
    expect(onQ1.map((b: { id: number }) => b.id)).toEqual([ids['len']])
    const hooks = JSON.parse(await out(['behaviors', 'list', '--type', 'webhook', '--format', 'json']))
    expect(hooks.map((b: { id: number }) => b.id)).toEqual([ids['hook']])
    const both = JSON.parse(
      await out(['behaviors', 'list', '--path', 'Projects', '--type', 'webhook', '--format', 'json']),
    )
    expect(both).toEqual([])
    expect(await out(['behaviors', 'list', '--path', 'Elsewhere'])).toBe('no behaviors\n')
  })

  it('prints a table with one line a behavior', async () => {
    const lines = (await out(['behaviors', 'list'])).trimEnd().split('\n')
    expect(lines).toHaveLength(4)
    expect(lines[0]).toMatch(/^id +path +behavior +name +recursive +value$/)
    expect(lines[1]).toContain(`${ids['ext']}   /Projects`)
    expect(lines[1]).toContain('CSV only')
    expect(lines[1]).toContain('{"extensions":["csv"],"mode":"allow"}')
    expect(lines[3]).toContain('/Inbox')
    expect(lines.join('\n')).not.toMatch(/secret/)
  })

  it('lists as CSV with a header', async () => {
    const rows: CsvRow[] = parse(await out(['behaviors', 'list', '--format', 'csv']), { columns: true })
    expect(rows).toHaveLength(3)
    expect(rows[0]).toEqual({
      id: String(ids['ext']),
      path: 'Projects',
      behavior: 'limit_file_extensions',
      name: 'CSV only',
      description: 'Reports, "quoted", two\nlines',
      recursive: 'true',
      disable_parent_folder_behavior: 'false',
      value: '{"extensions":["csv"],"mode":"allow"}',
    })
    expect(rows[1]?.['disable_parent_folder_behavior']).toBe('true')
  })

  it('exports JSON lines to standard output and CSV to a file, secrets hidden', async () => {
    const text = await out(['behaviors', 'export'])
    const lines = text.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    const parsed = lines.map((l) => JSON.parse(l))
    expect(parsed.map((b) => b.id)).toEqual([ids['ext'], ids['len'], ids['hook']])
    expect(parsed[2].value.headers).toEqual({ Authorization: null })
    expect(text).not.toMatch(/secret/)

    const file = path.join(site.dataDir, 'behaviors.csv')
    expect(await out(['behaviors', 'export', '--format', 'csv', '--output', file])).toBe('')
    const csv = await fs.readFile(file, 'utf8')
    expect(csv).not.toMatch(/secret/)
    const rows: CsvRow[] = parse(csv, { columns: true })
    expect(rows.map((r) => r['path'])).toEqual(['Projects', 'Projects/Q1', 'Inbox'])
    expect(JSON.parse(rows[2]?.['value'] ?? '').verification_token).toBeNull()
    expect((await fs.readdir(site.dataDir)).filter((f) => f.endsWith('.part'))).toEqual([])
  })

  it('refuses an unknown format and a folder outside the tree', async () => {
    const bad = await refused(['behaviors', 'list', '--format', 'xml'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("option '--format <format>' argument 'xml' is invalid")
    const up = await refused(['behaviors', 'list', '--path', '../etc'])
    expect(up).toEqual({ code: 1, stderr: expect.stringMatching(/^error: bad-request\/invalid-path: /) })
    const nowhere = await refused([
      'behaviors',
      'export',
      '--output',
      path.join(site.dataDir, 'no', 'such.jsonl'),
    ])
    expect(nowhere.code).toBe(1)
    expect(nowhere.stderr).toContain('ENOENT')
  })
})
