import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import https from 'node:https'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import Files from 'files.com/lib/Files.js'
import File from 'files.com/lib/models/File.js'
import { afterAll, beforeAll, beforeEach, vi } from 'vitest'
import { type DialectName, type TestServer, useServer, useStarted } from '../helpers/server.js'
import { startTlsFront } from '../helpers/tls-front.js'
import { type Recorder, resetSdk, startRecorder } from './sdk.js'

/**
 * The part size the server asks for: small, so a few hundred KiB make a multi-part upload. Larger
 * than the 64 KiB chunks a file stream reads: with chunks as large as a part, the SDK's
 * File.uploadFile sends a chunk twice (its leftover buffer is not cleared), whatever the server.
 */
export const PART_SIZE = 96 * 1024

export interface FilesSdkContext {
  s: TestServer
  rec: Recorder
  /** A temporary folder for local files the SDK uploads from or downloads to. */
  tmp: string
}

/**
 * One Wharf server per test file, behind the recording proxy and an HTTPS front (the SDK's
 * download helpers use `https.get`). BASE_URL is the HTTPS front, so `upload_uri` and
 * `download_uri` lead there too. The SDK is reset before each test and holds the site-wide key.
 */
export function filesSdkServer(dialect: DialectName, use: (ctx: FilesSdkContext) => void): void {
  const s = useServer(dialect, { UPLOAD_PART_SIZE: String(PART_SIZE) })
  const rec = useStarted(`${dialect} SDK recorder`, () => startRecorder(s.url))
  const tls = useStarted(`${dialect} SDK HTTPS front`, () => startTlsFront(rec.url))
  let tmp: string | undefined
  const defaultCa = https.globalAgent.options.ca
  beforeAll(async () => {
    s.container.config.baseUrl = tls.url
    // The SDK's fetches and https.get use the global agent: trust the front's certificate there.
    https.globalAgent.options.ca = tls.cert
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-sdk-files-'))
    use({ s, rec, tmp })
  })
  // Before the front, the proxy and the server are closed.
  afterAll(async () => {
    https.globalAgent.options.ca = defaultCa
    if (tmp) await fs.rm(tmp, { recursive: true, force: true })
  })
  beforeEach(() => {
    resetSdk(tls.url)
    Files.setApiKey(s.adminKey)
    rec.requests.length = 0
  })
}

export const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`

export function md5(bytes: Buffer | string): string {
  return crypto.createHash('md5').update(bytes).digest('hex')
}

/**
 * `File.find` once the file's md5 and CRC-32 are known: a background job computes them after
 * the upload, so the File an upload answers has them as null.
 */
export async function findSummed(p: string): Promise<File> {
  return vi.waitFor(
    async () => {
      const found = await File.find(p)
      if (found.md5 === null || found.md5 === undefined) throw new Error(`no checksums yet for ${p}`)
      return found
    },
    { timeout: 20_000, interval: 20 },
  )
}

/** CRC-32 as the File resource shows it: 8 lower-case hex characters. */
export function crc32(bytes: Buffer | string): string {
  return zlib.crc32(bytes).toString(16).padStart(8, '0')
}
