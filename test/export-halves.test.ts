import fs from 'node:fs/promises'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { ExportJob } from '../src/exports/export-kind.js'
import { webhookLogSource } from '../src/exports/webhook-log-export.js'
import { useServer } from './helpers/server.js'
import { logJob, seedMany } from './helpers/webhook-log-fixtures.js'

/**
 * A large webhook-log export on SQLite is built in two halves at once (the second in a worker
 * thread): the same bytes, in the same order, as the one-connection build of the same records.
 */
describe('webhook-log export built in two halves (sqlite)', () => {
  const s = useServer('sqlite')
  let dir: string
  const header = Buffer.from('header\r\n')
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(s.container.config.dataDir, 'halves-'))
    const start = Date.UTC(2026, 0, 1)
    await seedMany(s, 'left', 700, start)
    await seedMany(s, 'right', 300, start + 10_000_000)
    await seedMany(s, 'left', 200, start + 20_000_000)
  })

  const job = (query: Record<string, unknown>, range: Partial<ExportJob> = {}) => logJob(s, query, range)

  async function oneConnection(j: ExportJob, pageSize: number): Promise<{ csv: string; count: number }> {
    const parts: Buffer[] = [header]
    let count = 0
    for await (const page of webhookLogSource(s.container.database).pages(
      j,
      pageSize,
      new AbortController().signal,
    )) {
      if (Array.isArray(page)) throw new Error('expected blocks of CSV')
      parts.push(page.csv)
      count += page.count
    }
    return { csv: Buffer.concat(parts).toString(), count }
  }

  async function twoHalves(j: ExportJob, pageSize: number, signal = new AbortController().signal) {
    const writer = await webhookLogSource(s.container.database).halves!(j, pageSize, signal, header)
    if (!writer) return null
    const files = [path.join(dir, `a-${Math.random()}`), path.join(dir, `b-${Math.random()}`)]
    const count = await writer.write(files)
    const csv = Buffer.concat([await fs.readFile(files[0]!), await fs.readFile(files[1]!)]).toString()
    return { csv, count }
  }

  it('writes what one connection writes, whatever the page size and query', async () => {
    const cases: [Record<string, unknown>, Partial<ExportJob>, number][] = [
      [{}, {}, 100],
      [{}, {}, 7],
      [{ query_folder: 'left' }, {}, 64],
      [{ query_folder: 'right' }, {}, 50],
      [{}, { start_at: Date.UTC(2026, 0, 1) + 300_000, end_at: Date.UTC(2026, 0, 1) + 10_100_000 }, 40],
    ]
    for (const [query, range, pageSize] of cases) {
      const j = job(query, range)
      const expected = await oneConnection(j, pageSize)
      const got = await twoHalves(j, pageSize)
      expect(got).not.toBeNull()
      expect(got!.count).toBe(expected.count)
      expect(got!.csv === expected.csv).toBe(true)
    }
    expect((await oneConnection(job({ query_folder: 'right' }), 50)).count).toBe(300)
  })

  it('leaves small exports to one connection', async () => {
    expect(await twoHalves(job({}), 5000)).toBeNull()
  })

  it('fails the build with the reason when the worker thread cannot read the database', async () => {
    const broken = { ...s.container.database, sqliteFile: path.join(dir, 'no-such.sqlite') }
    const writer = await webhookLogSource(broken).halves!(job({}), 1, new AbortController().signal, header)
    const files = [path.join(dir, 'broken-a'), path.join(dir, 'broken-b')]
    await expect(writer!.write(files)).rejects.toThrow(/unable to open database|no such file/i)
  })

  it('stops both halves when the build is stopped', async () => {
    const stop = new AbortController()
    const writer = await webhookLogSource(s.container.database).halves!(job({}), 1, stop.signal, header)
    const files = [path.join(dir, 'stop-a'), path.join(dir, 'stop-b')]
    const running = writer!.write(files)
    setTimeout(() => stop.abort(new Error('lease lost')), 5)
    await expect(running).rejects.toThrow('lease lost')
  })
})
