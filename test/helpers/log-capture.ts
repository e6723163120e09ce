import { Writable } from 'node:stream'

/** Collects what a pino logger writes: one line per record, and the records parsed. */
export function captureLog() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
      cb()
    },
  })
  return { stream, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, any>) }
}
