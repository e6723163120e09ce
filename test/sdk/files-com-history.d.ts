// Types for the history part of the official `files.com` SDK (CommonJS, untyped) used by the SDK suite.

declare module 'files.com/lib/models/Action.js' {
  /** What the History list methods return: one Action record per element. */
  export default class Action {
    readonly id: number
    readonly path: string
    readonly when: string
    readonly destination: string | null
    readonly display: string
    readonly ip: string | null
    readonly source: string | null
    readonly targets: { type: string; id?: number; name?: string }[]
    readonly user_id: number | null
    readonly username: string | null
    readonly action: string
    readonly failure_type: string | null
    readonly interface: string | null
    readonly attributes: Record<string, unknown>
    getId(): number
    getPath(): string
    getDisplay(): string
  }
}

declare module 'files.com/lib/models/History.js' {
  import type Action from 'files.com/lib/models/Action.js'

  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
  }
  type Params = Record<string, unknown>
  const History: {
    list(params?: Params, options?: RequestOptions): Promise<Action[]>
    all(params?: Params, options?: RequestOptions): Promise<Action[]>
    listForFile(path: string, params?: Params, options?: RequestOptions): Promise<Action[]>
    listForFolder(path: string, params?: Params, options?: RequestOptions): Promise<Action[]>
    listForUser(userId: number, params?: Params, options?: RequestOptions): Promise<Action[]>
    listLogins(params?: Params, options?: RequestOptions): Promise<Action[]>
  }
  export default History
}
