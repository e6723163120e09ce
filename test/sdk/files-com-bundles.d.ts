// Types for the share-link part of the official `files.com` SDK (CommonJS, untyped) used by the suite.

declare module 'files.com/lib/models/Bundle.js' {
  interface RequestOptions {
    apiKey?: string
    sessionId?: string
    autoPaginate?: boolean
  }
  export default class Bundle {
    constructor(attributes?: Record<string, unknown>, options?: RequestOptions)
    readonly id: number
    readonly code: string
    readonly url: string
    readonly description: string | null
    readonly note: string | null
    readonly permissions: string
    readonly password_protected: boolean
    readonly max_uses: number | null
    readonly expires_at: string | null
    readonly user_id: number | null
    readonly username: string | null
    readonly paths: string[] | undefined
    readonly bundlepaths: { recursive: boolean; path: string }[] | undefined
    readonly attributes: Record<string, unknown>
    getCode(): string
    setNote(value: string): void
    update(params?: Record<string, unknown>): Promise<Bundle>
    delete(params?: Record<string, unknown>): Promise<void>
    save(): Promise<boolean>
    share(params?: Record<string, unknown>): Promise<void>
    static list(params?: Record<string, unknown>, options?: RequestOptions): Promise<Bundle[]>
    static find(id: number, params?: Record<string, unknown>, options?: RequestOptions): Promise<Bundle>
    static create(params: Record<string, unknown>, options?: RequestOptions): Promise<Bundle>
  }
}

declare module 'files.com/lib/models/BundleRecipient.js' {
  export default class BundleRecipient {
    readonly recipient: string
    readonly name: string | null
    readonly company: string | null
    readonly note: string | null
    readonly sent_at: string | null
    readonly attributes: Record<string, unknown>
    static list(params: Record<string, unknown>): Promise<BundleRecipient[]>
    static create(params: Record<string, unknown>): Promise<BundleRecipient>
  }
}

declare module 'files.com/lib/models/BundleNotification.js' {
  export default class BundleNotification {
    readonly id: number
    readonly bundle_id: number
    readonly notify_user_id: number
    readonly notify_on_registration: boolean
    readonly notify_on_upload: boolean
    readonly attributes: Record<string, unknown>
    update(params?: Record<string, unknown>): Promise<BundleNotification>
    delete(params?: Record<string, unknown>): Promise<void>
    static list(params?: Record<string, unknown>): Promise<BundleNotification[]>
    static find(id: number, params?: Record<string, unknown>): Promise<BundleNotification>
    static create(params: Record<string, unknown>): Promise<BundleNotification>
  }
}

declare module 'files.com/lib/models/BundleRegistration.js' {
  export default class BundleRegistration {
    readonly code: string | null
    readonly name: string | null
    readonly email: string | null
    readonly bundle_id: number
    readonly bundle_code: string
    readonly attributes: Record<string, unknown>
    static list(params?: Record<string, unknown>): Promise<BundleRegistration[]>
  }
}

declare module 'files.com/lib/models/BundleDownload.js' {
  export default class BundleDownload {
    readonly download_method: string
    readonly path: string
    readonly bundle_registration: Record<string, unknown>
    readonly attributes: Record<string, unknown>
    static list(params?: Record<string, unknown>): Promise<BundleDownload[]>
  }
}

declare module 'files.com/lib/models/BundleAction.js' {
  export default class BundleAction {
    readonly action: string
    readonly path: string
    readonly bundle_registration_name: string | null
    readonly attributes: Record<string, unknown>
    static list(params?: Record<string, unknown>): Promise<BundleAction[]>
  }
}

declare module 'files.com/lib/models/InboxRecipient.js' {
  export default class InboxRecipient {
    readonly recipient: string
    readonly name: string | null
    readonly company: string | null
    readonly note: string | null
    readonly sent_at: string | null
    readonly attributes: Record<string, unknown>
    static list(params: Record<string, unknown>): Promise<InboxRecipient[]>
    static create(params: Record<string, unknown>): Promise<InboxRecipient>
  }
}

declare module 'files.com/lib/models/InboxRegistration.js' {
  export default class InboxRegistration {
    readonly name: string | null
    readonly email: string | null
    readonly inbox_id: number
    readonly inbox_title: string | null
    readonly attributes: Record<string, unknown>
    static list(params?: Record<string, unknown>): Promise<InboxRegistration[]>
  }
}

declare module 'files.com/lib/models/InboxUpload.js' {
  export default class InboxUpload {
    readonly path: string
    readonly created_at: string
    readonly inbox_registration: Record<string, unknown>
    readonly attributes: Record<string, unknown>
    static list(params?: Record<string, unknown>): Promise<InboxUpload[]>
  }
}
