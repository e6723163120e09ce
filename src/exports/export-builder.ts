import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { stringify } from 'csv-stringify/sync'
import type { BlobStore } from '../blobs/blob-store.js'
import type { ExportKind } from '../db/schema.js'
import type { ExportJob, ExportKindSpec, ExportSource } from './export-kind.js'

/**
 * RFC 4180: CRLF between records; a field is quoted (its quotes doubled) when it holds a quote, a
 * comma, a CR or an LF, so that no reader takes a line break inside a field for the end of a record.
 */
const CSV = { record_delimiter: 'windows', quote_record_delimiter: true } as const

/**
 * csv-stringify takes about 40 µs a record: rows are encoded this many at a time, with a turn of
 * the event loop between, so that requests are not held up by a long export.
 */
const STRINGIFY_BATCH = 250

export interface BuiltExport {
  blobKey: string
  bytes: number
  count: number
}

/**
 * Writes an export's records as CSV into the blob store: the header row, then one page of records
 * at a time, each page encoded at once (csv-stringify) and handed on only when the file has room
 * for it, so memory holds about one page whatever the export's size. The blob appears complete or
 * not at all (temporary file, then rename), under the key the worker queued for deletion before
 * the build began; a build that stops midway leaves only a temporary file, which the janitor
 * removes.
 */
export class ExportBuilder {
  constructor(
    private readonly blobs: BlobStore,
    private readonly kinds: Record<ExportKind, ExportKindSpec>,
    private readonly sources: Record<ExportKind, ExportSource>,
    private readonly pageSize: number,
  ) {}

  /** Builds the export's CSV as the blob `key` (from the store's `newKey`). */
  async build(job: ExportJob, signal: AbortSignal, key: string): Promise<BuiltExport> {
    // Stopped while the file's key was being queued: a listener added to an aborted signal never
    // fires, so a source would wait for its own end before it saw the stop.
    signal.throwIfAborted()
    const source = this.sources[job.kind]
    const header = stringify([this.kinds[job.kind].columns as string[]], CSV)
    const pageSize = this.pageSize
    let count = 0
    const halves = await source.halves?.(job, pageSize, signal, Buffer.from(header))
    if (halves) {
      const info = await this.blobs.putSegments(
        2,
        async (files) => {
          count = await halves.write(files)
        },
        { key },
      )
      return { blobKey: info.key, bytes: info.size, count }
    }
    async function* csv() {
      yield header
      for await (const page of source.pages(job, pageSize, signal)) {
        signal.throwIfAborted()
        if (Array.isArray(page)) {
          for (let i = 0; i < page.length; i += STRINGIFY_BATCH) {
            if (i > 0) await nextTurn()
            yield stringify(page.slice(i, i + STRINGIFY_BATCH), CSV)
          }
          count += page.length
        } else if (page.count > 0) {
          count += page.count
          yield page.csv
        }
      }
    }
    // Room for about one page ahead: the next page is read while the last one is being written.
    const info = await this.blobs.putUnhashed(
      Readable.from(csv(), { objectMode: false, highWaterMark: 4 * 1024 * 1024 }),
      { key },
    )
    return { blobKey: info.key, bytes: info.size, count }
  }
}
