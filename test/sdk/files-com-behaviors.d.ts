// Types for the folder-behavior part of the official `files.com` SDK (CommonJS, untyped) used by the tests.

declare module 'files.com/lib/models/Behavior.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
  }
  type Params = Record<string, unknown>
  export default class Behavior {
    constructor(attributes?: Params, options?: RequestOptions)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly path: string
    readonly behavior: string
    readonly name: string | null
    readonly description: string | null
    readonly value: Record<string, any>
    readonly recursive: boolean
    readonly disable_parent_folder_behavior: boolean
    getId(): number
    getPath(): string
    getBehavior(): string
    getValue(): Record<string, any>
    getRecursive(): boolean
    setName(value: string): void
    update(params?: Params): Promise<Behavior>
    delete(params?: Params): Promise<void>
    save(): Promise<boolean>
    static list(params?: Params, options?: RequestOptions): Promise<Behavior[]>
    static all(params?: Params, options?: RequestOptions): Promise<Behavior[]>
    static find(id: number, params?: Params, options?: RequestOptions): Promise<Behavior>
    static get(id: number, params?: Params, options?: RequestOptions): Promise<Behavior>
    static listFor(path: string, params?: Params, options?: RequestOptions): Promise<Behavior[]>
    static create(params?: Params, options?: RequestOptions): Promise<Behavior>
    /** POST /behaviors/webhook/test: resolves with nothing (the SDK drops the answer). */
    static webhookTest(params?: Params, options?: RequestOptions): Promise<void>
  }
}
