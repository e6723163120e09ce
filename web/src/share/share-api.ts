import { encodePath, ownOrigin, request } from '../api'
import type { UploadPart, UploadTarget } from '../pages/files/upload'

/** What a visitor sees of a share link before unlocking it (`GET /public/bundles/{code}`). */
export interface PublicBundle {
  code: string
  description: string | null
  note: string | null
  permissions: 'read' | 'write' | 'read_write' | 'preview_only'
  preview_only: boolean
  password_protected: boolean
  require_registration: boolean
  skip_name: boolean
  skip_email: boolean
  skip_company: boolean
  expires_at: string | null
  can_upload: boolean
  dont_allow_folders_in_uploads: boolean
  paths?: string[]
}

/** A shared file or folder, its path relative to the share. */
export interface SharedEntry {
  path: string
  display_name: string
  type: 'file' | 'directory'
  size: number | null
  mtime: string | null
}

export interface Registration {
  password?: string
  name?: string
  email?: string
  company?: string
}

const HEADER = 'X-Bundle-Registration-Code'
const stored = (code: string) => `wharf.share.${code}`

/**
 * The public API of one share link, as nobody: every call after the registration carries its
 * code. The code is kept for the tab (sessionStorage): a reload is the same visit, not a new use.
 */
export class ShareApi {
  private reg: string | null

  constructor(readonly code: string) {
    this.reg = sessionStorage.getItem(stored(code))
  }

  get registered(): boolean {
    return this.reg !== null
  }

  forget(): void {
    this.reg = null
    sessionStorage.removeItem(stored(this.code))
  }

  private base(rest = ''): string {
    return `/public/bundles/${encodeURIComponent(this.code)}${rest}`
  }

  private async call<T>(method: string, rest: string, body?: unknown, query?: Record<string, string>) {
    const headers: Record<string, string> = this.reg ? { [HEADER]: this.reg } : {}
    return request<T>(method, this.base(rest), { body, headers, query, anonymous: true })
  }

  async show(): Promise<PublicBundle> {
    return (await this.call<PublicBundle>('GET', '')).data
  }

  async register(input: Registration): Promise<void> {
    const r = await request<{ code: string }>('POST', this.base('/registrations'), {
      body: input,
      anonymous: true,
    })
    this.reg = r.data.code
    sessionStorage.setItem(stored(this.code), r.data.code)
  }

  /** Every entry of a shared folder ('' for the shared files and folders themselves). */
  async list(folder: string): Promise<SharedEntry[]> {
    const out: SharedEntry[] = []
    let cursor: string | null = null
    const rest = folder === '' ? '/folders' : `/folders/${encodePath(folder)}`
    do {
      const q: Record<string, string> = { per_page: '1000' }
      if (cursor) q['cursor'] = cursor
      const page: { data: SharedEntry[]; next: string | null } = await this.call('GET', rest, undefined, q)
      out.push(...page.data)
      cursor = page.next
    } while (cursor && out.length < 10_000)
    return out
  }

  /** A fresh download link of one shared file, on this page's origin. */
  async downloadUri(path: string): Promise<string> {
    const f = (await this.call<{ download_uri: string }>('GET', `/files/${encodePath(path)}`)).data
    return ownOrigin(f.download_uri)
  }

  /** A link to a ZIP of these share-relative paths ([''] for the whole share). */
  async zipUri(paths: string[]): Promise<string> {
    return ownOrigin((await this.call<{ download_uri: string }>('POST', '/zip', { paths })).data.download_uri)
  }

  /** Uploads go through the share's own `POST …/files/{path}`, the Files page's flow. */
  readonly uploads: UploadTarget = {
    begin: async (path, size) =>
      (await this.call<UploadPart>('POST', `/files/${encodePath(path)}`, { action: 'put', size })).data,
    part: async (path, ref, n) =>
      (await this.call<UploadPart>('POST', `/files/${encodePath(path)}`, { action: 'put', ref, part: n }))
        .data,
    end: (path, ref) => this.call('POST', `/files/${encodePath(path)}`, { action: 'end', ref }),
  }
}
