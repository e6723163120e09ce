// Types for the app catalog part of the official `files.com` SDK (CommonJS, untyped) used by the suite.

declare module 'files.com/lib/models/App.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
  }
  export default class App {
    readonly name: string
    readonly app_type: string
    readonly featured: boolean
    readonly documentation_links: Record<string, string>
    readonly screenshot_list_urls: string[]
    readonly folder_behavior_type: string | null
    readonly attributes: Record<string, unknown>
    getName(): string
    getAppType(): string
    getFeatured(): boolean
    static list(params?: Record<string, unknown>, options?: RequestOptions): Promise<App[]>
    static all(params?: Record<string, unknown>, options?: RequestOptions): Promise<App[]>
  }
}
