import net from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { queueMail, wakeMailWorkers } from '../src/mail/mail-queue.js'
import { MailWorker, type MailWorkerOptions } from '../src/mail/mail-worker.js'
import { dialects, useServer, useStarted } from './helpers/server.js'
import { startSmtp } from './helpers/smtp.js'

const FROM = 'Wharf <wharf@files.example>'

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe.each(dialects)('the mail outbox (%s)', (dialect) => {
  const s = useServer(dialect)
  const smtp = useStarted('SMTP server', startSmtp)
  let clock = 1_800_000_000_000
  const workers: MailWorker[] = []

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()))
    await s.container.db.deleteFrom('mail_outbox').execute()
    smtp.received.length = 0
    smtp.refuseNext.length = 0
  })

  /** A started worker on the test clock; polling is left out, so only kicks make it look. */
  async function worker(opts: Partial<MailWorkerOptions> = {}): Promise<MailWorker> {
    const w = new MailWorker(s.container.db, {
      smtpUrl: smtp.url,
      from: FROM,
      concurrency: 2,
      leaseMs: 60_000,
      pollMs: 3_600_000,
      retrySchedule: [60, 600],
      now: () => clock,
      ...opts,
    })
    workers.push(w)
    await w.start()
    await w.idle()
    return w
  }

  /** Wakes the workers and waits until they have nothing left to do now. */
  async function settle(...ws: MailWorker[]): Promise<void> {
    wakeMailWorkers()
    await Promise.all(ws.map((w) => w.idle()))
  }

  const row = (id: number) =>
    s.container.db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

  const mail = (to = 'client@example.org') => ({
    siteId: s.container.site.id,
    kind: 'bundle_share',
    to,
    subject: 'Files shared with you',
    text: 'Open https://files.example/f/abc to download them.',
    html: '<p>Open <a href="https://files.example/f/abc">the share</a>.</p>',
  })

  it('sends a message queued in a committed transaction, as text and HTML, and marks it sent', async () => {
    const w = await worker()
    const [id] = await s.container.db
      .transaction()
      .execute((trx) => queueMail(trx, [mail()], clock, 'files.example'))
    await settle(w)
    const [got] = await smtp.waitFor(1)
    expect(got!.from).toBe('wharf@files.example')
    expect(got!.to).toEqual(['client@example.org'])
    expect(got!.header('Subject')).toBe('Files shared with you')
    expect(got!.header('From')).toBe(FROM)
    const r = await row(id!)
    expect(got!.header('Message-ID')).toBe(r.message_id)
    expect(r.message_id).toMatch(/^<[0-9a-f-]{36}@files\.example>$/)
    expect(got!.raw).toContain('Open https://files.example/f/abc to download them.')
    expect(got!.raw).toContain('text/html')
    expect(r).toMatchObject({ state: 'sent', attempts: 1, last_error: null, lease_owner: null })
    expect(Number(r.sent_at)).toBe(clock)
  })

  it('sends nothing for a transaction that rolled back', async () => {
    const w = await worker()
    await expect(
      s.container.db.transaction().execute(async (trx) => {
        await queueMail(trx, [mail()], clock)
        throw new Error('the action failed')
      }),
    ).rejects.toThrow('the action failed')
    await settle(w)
    expect(await s.container.db.selectFrom('mail_outbox').selectAll().execute()).toEqual([])
    expect(smtp.received).toEqual([])
  })

  it('tries a temporary refusal again on the schedule, and not before', async () => {
    const w = await worker()
    smtp.refuseNext.push(451)
    const [id] = await queueMail(s.container.db, [mail()], clock)
    await settle(w)
    let r = await row(id!)
    expect(r).toMatchObject({ state: 'queued', attempts: 1 })
    expect(r.last_error).toMatch(/^451 /)
    expect(Number(r.next_attempt_at)).toBe(clock + 60_000)
    clock += 59_000
    await settle(w)
    expect(smtp.received).toEqual([])
    clock += 1_000
    await settle(w)
    await smtp.waitFor(1)
    r = await row(id!)
    expect(r).toMatchObject({ state: 'sent', attempts: 2, last_error: null })
  })

  it('gives a permanent refusal up at once, and sends the other messages', async () => {
    const w = await worker()
    smtp.refuseNext.push(550)
    const [bad] = await queueMail(s.container.db, [mail('nobody@example.org')], clock)
    await settle(w)
    const [good] = await queueMail(s.container.db, [mail('someone@example.org')], clock)
    clock += 3_600_000
    await settle(w)
    await smtp.waitFor(1)
    expect(smtp.received.map((m) => m.to)).toEqual([['someone@example.org']])
    const r = await row(bad!)
    expect(r).toMatchObject({ state: 'failed', attempts: 1 })
    expect(r.last_error).toMatch(/^550 /)
    expect(await row(good!)).toMatchObject({ state: 'sent' })
  })

  it('keeps a message while the server cannot be reached, and gives it up after the last attempt', async () => {
    const w = await worker({ smtpUrl: `smtp://127.0.0.1:${await closedPort()}`, retrySchedule: [60] })
    const [id] = await queueMail(s.container.db, [mail()], clock)
    await settle(w)
    let r = await row(id!)
    expect(r).toMatchObject({ state: 'queued', attempts: 1 })
    expect(r.last_error).toContain('ECONNREFUSED')
    clock += 60_000
    await settle(w)
    r = await row(id!)
    expect(r).toMatchObject({ state: 'failed', attempts: 2 })
    expect(r.last_error).toContain('ECONNREFUSED')
  })

  it('loses nothing on a crash: a committed message is sent by the next worker, once a dead claim runs out', async () => {
    // Committed while no worker ran (the process stopped right after the action).
    const [waiting] = await queueMail(s.container.db, [mail('first@example.org')], clock)
    // Claimed by a process that died while sending: its lease runs for another minute.
    const [claimed] = await queueMail(s.container.db, [mail('second@example.org')], clock)
    await s.container.db
      .updateTable('mail_outbox')
      .set({ lease_owner: 'a-process-that-died', lease_until: clock + 60_000, attempts: 1 })
      .where('id', '=', claimed!)
      .execute()
    const w = await worker()
    await settle(w)
    await smtp.waitFor(1)
    expect(smtp.received.map((m) => m.to)).toEqual([['first@example.org']])
    expect(await row(waiting!)).toMatchObject({ state: 'sent' })
    clock += 60_001
    await settle(w)
    await smtp.waitFor(2)
    expect(smtp.received[1]!.to).toEqual(['second@example.org'])
    const r = await row(claimed!)
    expect(r).toMatchObject({ state: 'sent', attempts: 2 })
    expect(smtp.received[1]!.header('Message-ID')).toBe(r.message_id)
  })

  it('never sends one message twice from two workers at once', async () => {
    const a = await worker()
    const b = await worker()
    await queueMail(
      s.container.db,
      Array.from({ length: 20 }, (_, i) => mail(`r${i}@example.org`)),
      clock,
    )
    await settle(a, b)
    await smtp.waitFor(20)
    await settle(a, b)
    expect(smtp.received).toHaveLength(20)
    expect(new Set(smtp.received.map((m) => m.to[0])).size).toBe(20)
  })
})
