/** WebDAV's settings (config.ts reads them from the environment). */
export interface DavSettings {
  enabled: boolean
  /** URL path the tree is served under, without a trailing slash (e.g. `/dav`). */
  prefix: string
  /** How long a verified Basic login stays reusable without a request (at most an hour in all). */
  authCacheSeconds: number
}
