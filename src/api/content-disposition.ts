/**
 * `Content-Disposition: attachment` with an ASCII fallback name and the exact name in RFC 5987
 * form (RFC 6266), for Wharf's own downloads and for links that a blob store serves itself.
 */
export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_')
  const exact = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`
}
