// Types for the history-export part of the official `files.com` SDK (CommonJS, untyped) used by the tests.

declare module 'files.com/lib/models/HistoryExport.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
  }
  type Params = Record<string, unknown>
  export default class HistoryExport {
    constructor(attributes?: Params, options?: RequestOptions)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly status: string
    readonly results_url: string | null
    getId(): number
    getStatus(): string
    getResultsUrl(): string | null
    getQueryFolder(): string | null
    getQueryAction(): string | null
    getUserId(): number | null
    save(): Promise<boolean>
    static create(params?: Params, options?: RequestOptions): Promise<HistoryExport>
    static find(id: number, params?: Params, options?: RequestOptions): Promise<HistoryExport>
    static get(id: number, params?: Params, options?: RequestOptions): Promise<HistoryExport>
  }
}

declare module 'files.com/lib/models/HistoryExportResult.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
  }
  export default class HistoryExportResult {
    readonly attributes: Record<string, any>
    readonly id: number
    readonly path: string
    readonly action: string
    getId(): number
    getCreatedAt(): number
    getPath(): string
    getSrc(): string | null
    getDestination(): string | null
    getFileId(): number | null
    getUserIsFromParentSite(): boolean
    static list(params?: Record<string, unknown>, options?: RequestOptions): Promise<HistoryExportResult[]>
    static all(params?: Record<string, unknown>, options?: RequestOptions): Promise<HistoryExportResult[]>
  }
}
