/**
 * How many files one SFTP connection keeps open for reading with their read-ahead. Each holds up
 * to PROTOCOL_READ_BYTES read ahead (and a chunk on its way), so without a bound a client could
 * open its 256 handles on each of its 10 channels, read a byte from each, and hold more than a
 * gibibyte. Sixteen covers rclone's 4 transfers of 4 streams each; a client reading more files
 * at once than that still works, each evicted file reopened where it stood.
 */
export const MAX_OPEN_READ_STREAMS = 16

/** A file open for reading whose stream can be closed and later reopened at its position. */
export interface ParkableRead {
  /** A read is running: its stream must stay. */
  readonly busy: boolean
  /** Closes the stream and lets its read-ahead go; the next read reopens it. */
  park(): void
}

/**
 * A connection's read streams, least recently used first. Using one beyond the bound closes the
 * least recently used idle one (never one in the middle of a read: reads in progress are bounded
 * by the read gate, so the busy ones are few).
 */
export class ReadStreams {
  private readonly open = new Set<ParkableRead>()

  constructor(private readonly max = MAX_OPEN_READ_STREAMS) {}

  /** `read` has an open stream and is being read now. */
  use(read: ParkableRead): void {
    this.open.delete(read)
    this.open.add(read)
    if (this.open.size <= this.max) return
    for (const old of this.open) {
      if (this.open.size <= this.max) break
      if (old === read || old.busy) continue
      this.open.delete(old)
      old.park()
    }
  }

  /** `read` closed its stream itself (the file was closed, or the stream reopened elsewhere). */
  closed(read: ParkableRead): void {
    this.open.delete(read)
  }

  /** Streams open now (for tests and logs). */
  get size(): number {
    return this.open.size
  }
}
