import { describe, expect, it } from 'vitest'
import { type CsvBlock, CsvRecordBlocks } from '../src/db/copy-csv.js'

/** Feeds `chunks` in order; the blocks, and their text. */
function feed(chunks: Buffer[]): { blocks: CsvBlock[]; text: string; count: number } {
  const r = new CsvRecordBlocks()
  const blocks = chunks.flatMap((c) => r.push(c))
  const last = r.end()
  if (last) blocks.push(last)
  return {
    blocks,
    text: Buffer.concat(blocks.map((b) => b.csv)).toString(),
    count: blocks.reduce((n, b) => n + b.count, 0),
  }
}

/** PostgreSQL's CSV records end in LF, also inside quoted fields; Wharf's end in CRLF. */
describe('COPY output as blocks of CRLF records', () => {
  const copy = '1,"ab\n1"\n2,"c""d\n"\n3,x\n4,"""",""\n'
  const wharf = '1,"ab\n1"\r\n2,"c""d\n"\r\n3,x\r\n4,"""",""\r\n'

  it('ends a record only at a line feed outside quotes, wherever the stream cuts it', () => {
    const data = Buffer.from(copy)
    for (let a = 0; a <= data.length; a++) {
      for (let b = a; b <= data.length; b++) {
        const got = feed([data.subarray(0, a), data.subarray(a, b), data.subarray(b)])
        expect(got.text, `cut at ${a} and ${b}`).toBe(wharf)
        expect(got.count).toBe(4)
      }
    }
    // One byte at a time.
    expect(feed([...data].map((x) => Buffer.of(x))).text).toBe(wharf)
  })

  it('hands on whole records in blocks of about a MiB, a record bigger than a block in one piece', () => {
    const big = `1,"${'y\n'.repeat(1 << 20)}"\n`
    const small = Array.from({ length: 30_000 }, (_, i) => `${i},"${'z'.repeat(60)}"\n`).join('')
    const data = Buffer.from(small + big + small)
    const chunks: Buffer[] = []
    for (let at = 0; at < data.length; at += 65_536) chunks.push(data.subarray(at, at + 65_536))
    const got = feed(chunks)
    expect(got.count).toBe(60_001)
    expect(got.blocks.length).toBeGreaterThan(3)
    for (const b of got.blocks) expect(b.csv.subarray(-2).toString()).toBe('\r\n')
    expect(got.text === (small + big + small).replace(/"\n/g, '"\r\n')).toBe(true)
  })

  it('refuses a COPY that ends inside a record', () => {
    const r = new CsvRecordBlocks()
    r.push(Buffer.from('1,x\n2,"open\n'))
    expect(() => r.end()).toThrow('COPY ended in the middle of a record')
  })
})
