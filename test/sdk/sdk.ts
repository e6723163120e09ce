import http from 'node:http'
import type { FilesApiError } from 'files.com/lib/Errors.js'
import Files from 'files.com/lib/Files.js'
import { LogLevel } from 'files.com/lib/Logger.js'
import { beforeAll, beforeEach } from 'vitest'
import { makeFile, makeFolder } from '../helpers/file-rows.js'
import { forward, listenLoopback } from '../helpers/forward.js'
import {
  type DialectName,
  grant,
  makeKey,
  makeUser,
  type TestServer,
  useServer,
  useStarted,
} from '../helpers/server.js'

/**
 * The official SDK keeps its configuration in module globals (base URL, key, session): every test
 * starts from this state, so no test depends on what an earlier one left behind.
 */
export function resetSdk(baseUrl: string): void {
  Files.setBaseUrl(baseUrl)
  Files.setApiKey(undefined)
  Files.setSessionId(null)
  // A failure must surface at once, not after the SDK's silent retries.
  Files.configureNetwork({ maxNetworkRetries: 0, autoPaginate: true, networkTimeout: 20 })
  Files.setLogLevel(LogLevel.NONE)
}

/** Awaits an SDK call that must fail and returns what it threw. */
export async function sdkError(call: Promise<unknown>): Promise<FilesApiError> {
  try {
    await call
  } catch (err) {
    return err as FilesApiError
  }
  throw new Error('expected the SDK call to fail, but it succeeded')
}

/** The parts of a thrown SDK error that tell which error the server sent. */
export function describeError(err: FilesApiError) {
  return { className: err.constructor.name, type: err.type, httpCode: err.httpCode }
}

export interface RecordedRequest {
  method: string
  /** Path and query as the server received them. */
  url: string
  headers: http.IncomingHttpHeaders
  body: string
}

export interface Recorder {
  /** Give this to Files.setBaseUrl: it forwards everything to the server and remembers it. */
  url: string
  requests: RecordedRequest[]
  close(): Promise<void>
}

/**
 * A pass-through HTTP proxy in front of the server under test, so a test can see exactly what the
 * SDK put on the wire (the `page` parameter of auto-pagination, the id repeated in bodies …).
 */
export async function startRecorder(target: string): Promise<Recorder> {
  const upstream = new URL(target)
  const requests: RecordedRequest[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: body.toString('utf8'),
      })
      forward(upstream, req, res, body)
    })
  })
  const { port, close } = await listenLoopback(server)
  return { url: `http://127.0.0.1:${port}`, requests, close }
}

/**
 * One Wharf server per test file, reached through a recording proxy, with the SDK reset before
 * each test. `use` receives both once they are up.
 */
export function sdkServer(
  dialect: DialectName,
  use: (s: TestServer, rec: Recorder) => void,
  /** The server's settings, read when it starts. */
  env: () => Record<string, string> = () => ({}),
): void {
  const s = useServer(dialect, env)
  const rec = useStarted(`${dialect} SDK recorder`, () => startRecorder(s.url))
  beforeAll(() => use(s, rec))
  beforeEach(() => {
    resetSdk(rec.url)
    rec.requests.length = 0
  })
}

/**
 * A user who may make share links (`attachments_permission`), with full permission on `folder`
 * (made, with a file `a.txt` in it), an e-mail address of `<folder>@corp.example`, and a key.
 */
export async function linkMaker(s: TestServer, folder: string): Promise<{ id: number; key: string }> {
  const u = await makeUser(s, { email: `${folder}@corp.example` })
  await makeFolder(s, folder)
  await makeFile(s, `${folder}/a.txt`)
  await grant(s, u.id, folder, 'full')
  await s.container.db
    .updateTable('users')
    .set({ attachments_permission: 1 })
    .where('id', '=', u.id)
    .execute()
  return { id: u.id, key: (await makeKey(s, u.id)).key }
}
