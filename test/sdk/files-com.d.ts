// Types for the parts of the official `files.com` SDK (CommonJS, untyped) that the SDK suite uses.

declare module 'files.com/lib/Files.js' {
  interface NetworkOptions {
    maxNetworkRetries?: number
    minNetworkRetryDelay?: number
    maxNetworkRetryDelay?: number
    networkTimeout?: number
    autoPaginate?: boolean
  }
  const Files: {
    setBaseUrl(url: string): void
    getBaseUrl(): string
    setApiKey(key: string | undefined): void
    getApiKey(): string | undefined
    setSessionId(id: string | null): void
    getSessionId(): string | null
    setLogLevel(level: number): void
    configureNetwork(options: NetworkOptions): void
    getEndpointPrefix(): string
  }
  export default Files
}

declare module 'files.com/lib/Logger.js' {
  export const LogLevel: { NONE: number; ERROR: number; WARN: number; INFO: number; DEBUG: number }
}

declare module 'files.com/lib/Errors.js' {
  export class FilesError extends Error {
    code: number | undefined
  }
  export class FilesApiError extends FilesError {
    type: string
    httpCode: number
    title: string
    error: string
    instance: string
    errors: unknown
    modelErrors: unknown
    detail: unknown
    data: unknown
  }
}

declare module 'files.com/lib/models/Session.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
  }
  export default class Session {
    readonly id: string
    readonly read_only: boolean
    readonly attributes: Record<string, unknown>
    getId(): string
    static create(
      params: { username: string; password: string; otp?: string },
      options?: RequestOptions,
    ): Promise<Session>
    static delete(options?: RequestOptions): Promise<void>
    static destroy(params?: Record<string, unknown>, options?: RequestOptions): Promise<void>
  }
}

declare module 'files.com/lib/models/ApiKey.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
    headers?: Record<string, string>
  }
  export default class ApiKey {
    constructor(attributes?: Record<string, unknown>, options?: RequestOptions)
    readonly id: number
    readonly key?: string
    readonly name: string | null
    readonly description: string | null
    readonly descriptive_label: string
    readonly created_at: string
    readonly expires_at: string | null
    readonly last_use_at: string | null
    readonly path: string | null
    readonly permission_set: string
    readonly platform: string | null
    readonly url: string
    readonly user_id: number | null
    readonly attributes: Record<string, unknown>
    getId(): number
    getKey(): string | undefined
    getName(): string | null
    update(params: Record<string, unknown>): Promise<ApiKey>
    delete(params?: Record<string, unknown>): Promise<void>
    destroy(params?: Record<string, unknown>): Promise<void>
    save(): Promise<boolean>
    static list(params?: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey[]>
    static all(params?: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey[]>
    static find(id: number, params?: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey>
    static get(id: number, params?: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey>
    static findCurrent(options?: RequestOptions): Promise<ApiKey>
    static create(params: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey>
    static updateCurrent(params: Record<string, unknown>, options?: RequestOptions): Promise<ApiKey>
    static deleteCurrent(options?: RequestOptions): Promise<void>
  }
}

declare module 'files.com/lib/models/User.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
    headers?: Record<string, string>
  }
  export default class User {
    constructor(attributes?: Record<string, unknown>, options?: RequestOptions)
    readonly id: number
    readonly username: string
    readonly name: string | null
    readonly email: string | null
    readonly site_admin: boolean
    readonly self_managed: boolean
    readonly disabled: boolean
    readonly created_at: string
    readonly ftp_permission: boolean
    readonly sftp_permission: boolean
    readonly dav_permission: boolean
    readonly restapi_permission: boolean
    readonly allowed_ips: string | null
    readonly authenticate_until: string | null
    readonly billing_permission: boolean
    readonly readonly_site_admin: boolean
    readonly active_2fa: boolean
    readonly type_of_2fa: string | null
    readonly attributes: Record<string, unknown>
    getId(): number
    update(params: Record<string, unknown>): Promise<User>
    delete(params?: Record<string, unknown>): Promise<void>
    destroy(params?: Record<string, unknown>): Promise<void>
    save(): Promise<boolean>
    static list(params?: Record<string, unknown>, options?: RequestOptions): Promise<User[]>
    static all(params?: Record<string, unknown>, options?: RequestOptions): Promise<User[]>
    static find(id: number, params?: Record<string, unknown>, options?: RequestOptions): Promise<User>
    static create(params: Record<string, unknown>, options?: RequestOptions): Promise<User>
  }
}

declare module 'files.com/lib/models/FileAction.js' {
  export default class FileAction {
    readonly status: string
    readonly file_migration_id: number | null
    readonly attributes: Record<string, unknown>
    getStatus(): string
  }
}

declare module 'files.com/lib/models/File.js' {
  import type FileAction from 'files.com/lib/models/FileAction.js'

  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
    headers?: Record<string, string>
  }
  export default class File {
    constructor(attributes?: Record<string, unknown>, options?: RequestOptions)
    readonly id: number
    readonly path: string
    readonly display_name: string
    readonly type: 'file' | 'directory'
    readonly size: number
    readonly md5: string | null
    readonly crc32: string | null
    readonly mtime: string | null
    readonly created_at: string | null
    readonly mime_type: string | null
    readonly permissions: string
    readonly download_uri?: string
    readonly attributes: Record<string, unknown>
    getPath(): string
    getDownloadUri(): string | undefined
    /** GET /files/{path}: the File with a download_uri (or without, with action: 'stat'). */
    download(params?: Record<string, unknown>): Promise<File>
    downloadToString(): Promise<string>
    downloadToStream(stream: NodeJS.WritableStream): Promise<void>
    downloadToFile(localPath: string): Promise<void>
    delete(params?: { recursive?: boolean }): Promise<void>
    destroy(params?: { recursive?: boolean }): Promise<void>
    copy(params: { destination: string; overwrite?: boolean; structure?: boolean }): Promise<FileAction>
    move(params: { destination: string; overwrite?: boolean }): Promise<FileAction>
    static uploadFile(
      path: string,
      localFile: string,
      params?: Record<string, unknown>,
      options?: RequestOptions,
    ): Promise<File>
    static uploadData(
      path: string,
      data: string | Buffer,
      params?: Record<string, unknown>,
      options?: RequestOptions,
    ): Promise<File>
    static uploadStream(
      path: string,
      stream: NodeJS.ReadableStream,
      params?: Record<string, unknown>,
      options?: RequestOptions,
    ): Promise<File>
    /** GET /file_actions/metadata/{path}: the File without a download_uri. */
    static find(path: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<File>
    static get(path: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<File>
  }
}

declare module 'files.com/lib/models/Folder.js' {
  import type File from 'files.com/lib/models/File.js'

  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
    headers?: Record<string, string>
  }
  // biome-ignore lint/complexity/noStaticOnlyClass: typings of the SDK's own class, which is so
  export default class Folder {
    static listFor(path: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<File[]>
    static create(
      path: string,
      params?: { mkdir_parents?: boolean; provided_mtime?: string },
      options?: RequestOptions,
    ): Promise<File>
  }
}
