import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

/** A message as the test SMTP server received it. */
export interface ReceivedMail {
  from: string
  to: string[]
  /** The whole message as sent (headers and body). */
  raw: string
  /** A header's value (the first of that name), unfolded. */
  header(name: string): string | undefined
}

export interface TestSmtp {
  port: number
  url: string
  received: ReceivedMail[]
  /** Resolves once `count` messages have arrived (fails after `ms`: a lost message fails the test). */
  waitFor(count: number, ms?: number): Promise<ReceivedMail[]>
  /**
   * What the server answers to the next recipients, in turn: `null` accepts, a number refuses with
   * that SMTP code (451 temporary, 550 permanent). Once the list is spent, every recipient is taken.
   */
  refuseNext: (number | null)[]
  close(): Promise<void>
}

/** A real SMTP server on loopback (npm smtp-server), without TLS or authentication. */
export async function startSmtp(): Promise<TestSmtp> {
  const received: ReceivedMail[] = []
  const waiters: (() => void)[] = []
  const refuseNext: (number | null)[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      const code = refuseNext.shift()
      if (code === undefined || code === null) return callback()
      const err = Object.assign(new Error(code >= 500 ? 'mailbox unavailable' : 'try again later'), {
        responseCode: code,
      })
      return callback(err)
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        const head = raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ')
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          header(name) {
            const m = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(head)
            return m?.[1]?.trim()
          },
        })
        for (const w of waiters.splice(0)) w()
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    refuseNext,
    async waitFor(count, ms = 10_000) {
      const deadline = Date.now() + ms
      while (received.length < count) {
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`${received.length} messages arrived, not ${count}`)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left)
          waiters.push(() => {
            clearTimeout(t)
            resolve()
          })
        })
      }
      return received
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
