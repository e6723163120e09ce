/** A setting that is missing or out of range: start-up stops with every problem listed. */
export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
  }
}

/**
 * The settings the modules read. config.ts reads them from the environment, with the settings of
 * the front ends and the background work (its Config extends this).
 */
export interface ModuleSettings {
  baseUrl: string
  siteName: string
  adminUsername: string
  adminPassword: string | undefined
  sessionIdleMinutes: number
  login: { maxFailuresPerUser: number; windowMinutes: number }
  /** Failed logins per client address (docs/decisions.md, "The login defender"). */
  loginDefender: {
    /** Ranges (`a.b.c.d/n`, IPv6 `/n`) never counted or banned. */
    safeList: string[]
    /** Failures within the window that ban the address. */
    threshold: number
    windowMinutes: number
    banMinutes: number
  }
  /** Mail Wharf sends (docs/decisions.md, "Mail"). */
  mail: {
    /** SMTP_URL is set: share links go out by e-mail, notifications are sent. */
    enabled: boolean
    /** The From header (MAIL_FROM). */
    from: string
    /** MAIL_FROM's domain: the right-hand side of every Message-ID. */
    domain: string
    /** Sent and given-up messages are deleted this long after they were queued. */
    retentionDays: number
    /** Recipients one user may mail a share link to in an hour. */
    shareLimitPerHour: number
  }
  files: {
    /** Size of each upload part the server asks for (FileUploadPart.partsize). */
    partSize: number
    /** How long a signed part-upload URL stays valid. */
    uploadUrlSeconds: number
    /** An upload with no activity for this long is abandoned: its parts are deleted. */
    uploadExpiryMinutes: number
    /**
     * The same for an upload written by a transfer protocol, whose connection keeps it alive
     * meanwhile: once the process holding it is gone, it is abandoned after this long.
     */
    protocolUploadExpirySeconds: number
    /** How long a signed download_uri stays valid. */
    downloadUrlSeconds: number
    /** How often the janitor deletes orphaned blobs and abandoned uploads. */
    janitorIntervalSeconds: number
    /** How often file_expiration behaviors delete the files past their retention. */
    expirationIntervalSeconds: number
    /** Files deleted per transaction (each with its Action) by that job. */
    expirationBatchSize: number
  }
}
