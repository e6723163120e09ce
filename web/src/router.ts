import { useEffect, useState } from 'preact/hooks'

/**
 * Hash routes (`#/files/a/b.txt`): the server serves one page at `/`, and a file name with a dot
 * in it never reaches the server as a path of its own.
 */
export interface Route {
  /** First segment: files, developer, webhook-logs, history, api-keys, billing, apps, users. */
  page: string
  /** The rest of the path, decoded (for files: the folder path). */
  rest: string
  params: URLSearchParams
}

export function parseHash(hash: string): Route {
  const h = hash.replace(/^#\/?/, '')
  const q = h.indexOf('?')
  const pathPart = q === -1 ? h : h.slice(0, q)
  const params = new URLSearchParams(q === -1 ? '' : h.slice(q + 1))
  const segs = pathPart
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s))
  return { page: segs[0] ?? 'files', rest: segs.slice(1).join('/'), params }
}

export function href(page: string, rest = '', params?: Record<string, string>): string {
  const path = [page, ...rest.split('/').filter((s) => s !== '')].map(encodeURIComponent).join('/')
  const q = params ? new URLSearchParams(params).toString() : ''
  return `#/${path}${q ? `?${q}` : ''}`
}

export function navigate(to: string): void {
  location.hash = to
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash))
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash))
    window.addEventListener('hashchange', on)
    return () => window.removeEventListener('hashchange', on)
  }, [])
  return route
}
