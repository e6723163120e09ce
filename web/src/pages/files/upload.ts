import { ApiError, encodePath, post } from '../../api'

/** One FileUploadPart of the API: where and how to send one part of an upload. */
export interface UploadPart {
  ref: string
  path: string
  part_number: number
  partsize: number
  parallel_parts: boolean
  retry_parts: boolean
  upload_uri: string
  http_method: string
  headers: Record<string, string>
}

/** How many parts go at once when the server allows parallel parts. */
const PARALLEL = 3
/** How often one part is sent again after a network failure or a server error. */
const RETRIES = 2

export interface UploadHandle {
  /** Resolves with the stored path once the file is made; rejects with the first failure. */
  done: Promise<string>
  /** Stops every part under way; `done` then rejects. */
  abort(): void
}

/**
 * Where an upload's three kinds of call go: the signed-in user's own files (`OWN_FILES`), or a
 * share link's public API with the visitor's registration code (share/share-api.ts).
 */
export interface UploadTarget {
  /** Opens the upload at `path`: part 1. */
  begin(path: string, size: number): Promise<UploadPart>
  /** Part `n` of the upload `ref`, asked for just before it is sent. */
  part(path: string, ref: string, n: number): Promise<UploadPart>
  /** Makes the file of the parts sent. */
  end(path: string, ref: string): Promise<unknown>
}

/** The signed-in user's files: begin_upload, then `POST /files/{path}` for parts and the end. */
export const OWN_FILES: UploadTarget = {
  async begin(path, size) {
    const [first] = await post<UploadPart[]>(`/file_actions/begin_upload/${encodePath(path)}`, {
      size,
      parts: 1,
      mkdir_parents: true,
    })
    if (!first) throw new Error('The server opened no upload')
    return first
  },
  part: (path, ref, n) => post<UploadPart>(`/files/${encodePath(path)}`, { action: 'put', ref, part: n }),
  end: (path, ref) => post(`/files/${encodePath(path)}`, { action: 'end', ref }),
}

/**
 * Uploads one file the Files.com way: begin_upload opens it and gives part 1's signed URL, every
 * further part's URL is asked for just before it is sent (the URLs expire), the bytes of each
 * part (a slice of the File) are PUT to its URL without credentials, and `action=end` makes the
 * file. `onProgress` gets the bytes sent so far.
 */
export function uploadFile(
  path: string,
  file: Blob,
  onProgress: (sent: number) => void,
  target: UploadTarget = OWN_FILES,
): UploadHandle {
  const xhrs = new Set<XMLHttpRequest>()
  let aborted = false
  const sentByPart = new Map<number, number>()
  const report = () => {
    let sum = 0
    for (const n of sentByPart.values()) sum += n
    onProgress(Math.min(sum, file.size))
  }

  async function run(): Promise<string> {
    const first = await target.begin(path, file.size)
    const partSize = Math.max(1, first.partsize)
    // An empty file has no part at all.
    const count = file.size === 0 ? 0 : Math.ceil(file.size / partSize)
    let nextPart = 1
    const worker = async () => {
      while (!aborted && nextPart <= count) {
        const n = nextPart++
        const part = n === 1 ? first : await target.part(first.path, first.ref, n)
        const slice = file.slice((n - 1) * partSize, Math.min(n * partSize, file.size))
        await sendWithRetries(part, slice, n, first.retry_parts)
      }
    }
    const width = first.parallel_parts ? PARALLEL : 1
    await Promise.all(Array.from({ length: Math.min(width, Math.max(count, 1)) }, worker))
    if (aborted) throw new Error('Upload cancelled')
    await target.end(first.path, first.ref)
    return first.path
  }

  async function sendWithRetries(part: UploadPart, bytes: Blob, n: number, retry: boolean) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await send(part, bytes, n)
      } catch (err) {
        const again =
          retry &&
          attempt < RETRIES &&
          !aborted &&
          err instanceof ApiError &&
          (err.status === 0 || err.status >= 500)
        if (!again) throw err
        sentByPart.set(n, 0)
        report()
      }
    }
  }

  function send(part: UploadPart, bytes: Blob, n: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      xhrs.add(xhr)
      xhr.open(part.http_method || 'PUT', sameOrigin(part.upload_uri))
      for (const [k, v] of Object.entries(part.headers ?? {})) xhr.setRequestHeader(k, v)
      xhr.upload.onprogress = (e) => {
        sentByPart.set(n, e.loaded)
        report()
      }
      xhr.onload = () => {
        xhrs.delete(xhr)
        if (xhr.status >= 200 && xhr.status < 300) {
          sentByPart.set(n, bytes.size)
          report()
          resolve()
        } else reject(partError(xhr, n))
      }
      xhr.onerror = () => {
        xhrs.delete(xhr)
        reject(
          new ApiError(
            0,
            'network-error',
            `Part ${n} could not be sent: the connection to the server failed`,
          ),
        )
      }
      xhr.onabort = () => {
        xhrs.delete(xhr)
        reject(new Error('Upload cancelled'))
      }
      xhr.send(bytes)
    })
  }

  return {
    done: run(),
    abort() {
      aborted = true
      for (const x of xhrs) x.abort()
    },
  }
}

/**
 * Wharf's own part URL on the page's own origin: the server signs it with its BASE_URL, which may
 * name another host than the one the browser reached (and the page may only talk to its own). A
 * URL of the object store itself (S3 in direct mode) is used as it is: the bucket's CORS rule lets
 * the page send to it.
 */
function sameOrigin(uri: string): string {
  const u = new URL(uri, location.href)
  const wharfs = u.pathname.includes('/api/rest/v1/upload_parts/')
  return u.origin === location.origin || !wharfs ? u.href : `${u.pathname}${u.search}`
}

function partError(xhr: XMLHttpRequest, n: number): ApiError {
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(xhr.responseText) as Record<string, unknown>
  } catch {
    // Not JSON: the status says enough.
  }
  const message = typeof body['error'] === 'string' ? body['error'] : `The server answered ${xhr.status}`
  return new ApiError(xhr.status, String(body['type'] ?? `http-${xhr.status}`), `Part ${n}: ${message}`)
}
