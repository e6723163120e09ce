import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Static, Type } from '@sinclair/typebox'
import envSchema from 'env-schema'
import ipaddr from 'ipaddr.js'
import { anyCase, bool, int, isTrue, settingsAjv, text } from './api/setting-kinds.js'
import type { DavSettings } from './dav/dav-settings.js'
import { FTP_SETTINGS, type FtpConfig, ftpConfig } from './ftp/ftp-config.js'
import type { HttpTimeouts } from './http/slow-clients.js'
import { ConfigError, type ModuleSettings } from './modules/settings.js'
import type { SftpSettings } from './sftp/sftp-settings.js'

export { ConfigError }

/** Everything Wharf reads from the environment, validated once at start-up. */
/** Every setting; the modules' own are declared in modules/settings.ts. */
export interface Config extends ModuleSettings {
  /** Settings that are set but no longer do anything: logged as warnings at start-up. */
  warnings?: string[]
  host: string
  port: number
  dataDir: string
  /** `undefined` means the embedded SQLite database under `dataDir`. */
  databaseUrl: string | undefined
  /** How long a process may reuse an API key it has looked up (0: never). */
  authCacheSeconds: number
  logLevel: string
  trustProxy: boolean
  rateLimit: { perSecond: number; burst: number; concurrent: number }
  bodyLimitBytes: number
  /** Connection timeouts against slow or stalled clients (decisions.md, "Slow clients"). */
  http: HttpTimeouts
  /** Catalog file of GET /apps replacing or extending the default one (absolute path), if any. */
  appsFile: string | undefined
  /** Folder of the built web interface served at `/` (`npm run build` writes dist/web). */
  webDir: string
  webhooks: {
    /** Delay in seconds before each retry; its length + 1 is the number of attempts. */
    retrySchedule: number[]
    /** Non-global address ranges that listeners may nevertheless use (e.g. 127.0.0.0/8). */
    allowedCidrs: string[]
    connectTimeoutMs: number
    totalTimeoutMs: number
    /** Deliveries in flight at once, per process. */
    concurrency: number
    /** How long delivery-log records (and finished notifications) are kept. */
    logRetentionDays: number
    /** An endpoint failing continuously this long is disabled (docs/decisions.md, "Webhook endpoints"). */
    disableAfterDays: number
    /** The operational webhook: told when an endpoint is disabled or enabled again. */
    alertUrl: string | undefined
    /**
     * Per-path ordering: a delivery waits while an older one of its path to the same endpoint is
     * pending with fewer attempts than this; 0 sends unordered (docs/decisions.md).
     */
    orderHoldAttempts: number
  }
  /** WebDAV under the HTTP server (decisions.md, "WebDAV"). */
  dav: DavSettings
  /** The SFTP front end (docs/decisions.md, "SFTP"). */
  sftp: SftpSettings
  /** On SIGTERM, how long requests, transfers and sessions in flight may take to finish. */
  shutdownTimeoutMs: number
  /** Prometheus metrics on a listener of their own (docs/operations.md, "Metrics"). */
  metrics: { enabled: boolean; host: string; port: number; token: string | undefined }
  /** Where file bytes live (docs/decisions.md, "Blob stores"). */
  blobs: {
    /** `disk`: under DATA_DIR/storage. `s3`: in an S3-compatible bucket. */
    store: 'disk' | 's3'
    /** The bucket, when `store` is `s3`; credentials come from the AWS credential chain. */
    s3: S3Config | undefined
  }
  exports: {
    /** Exports (and their CSV files) are deleted this long after they were created. */
    retentionDays: number
    /** Export builds running at once, per process. */
    concurrency: number
    /** Records read and written per step of a build. */
    pageSize: number
    /** How long a worker's claim on a build lasts without renewal (renewed while it runs). */
    leaseSeconds: number
  }
  /** The md5 and CRC-32 of uploads, computed after the upload (decisions.md, "Checksums"). */
  checksums: {
    /** Blobs read at once, per process. */
    concurrency: number
    /** Longest wait between looks for work queued by another process (this one wakes itself). */
    pollMs: number
    /** How long a worker's claim on a blob lasts without renewal (renewed while it reads). */
    leaseSeconds: number
  }
  /** The FTP/FTPS front end (docs/decisions.md, "FTP and FTPS"). */
  ftp: FtpConfig
  /** The operator's SMTP server (nodemailer's URL form, credentials included); undefined: no mail. */
  smtpUrl: string | undefined
}

export interface S3Config {
  /** An S3-compatible server's URL; undefined for AWS S3 itself. */
  endpoint: string | undefined
  region: string
  bucket: string
  /** Key prefix of every object Wharf stores: empty, or ending in `/`. */
  prefix: string
  /** `endpoint/bucket/key` rather than `bucket.endpoint/key` (most self-hosted servers want it). */
  forcePathStyle: boolean
  /**
   * `direct`: clients send parts to and download from presigned URLs of the bucket itself.
   * `proxy`: every byte passes through Wharf's own signed URLs (for buckets clients cannot reach).
   */
  transferMode: 'direct' | 'proxy'
}

// src/config.ts and dist/config.js both sit one folder below the project: its dist/web either way.
const DEFAULT_WEB_DIR = fileURLToPath(new URL('../dist/web', import.meta.url))

type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * Every setting Wharf reads from the environment: its name, default and the values it takes, in one
 * env-schema definition (docs/architecture.md, at the top). What a schema cannot say (ranges
 * of addresses, settings that go together) is checked after it, by the functions below.
 */
const SETTINGS = Type.Object({
  HOST: text('127.0.0.1'),
  PORT: int(8080, 0, 65535),
  DATA_DIR: text('./data'),
  DATABASE_URL: Type.Optional(
    text(
      undefined,
      '^postgres(ql)?://',
      'DATABASE_URL must start with postgres:// or postgresql:// (leave it unset for SQLite)',
    ),
  ),
  BASE_URL: Type.Optional(
    text(
      undefined,
      `^${anyCase('http')}s?://[^\\s/?#]`,
      'BASE_URL must be an absolute http(s) URL (got "{got}")',
    ),
  ),
  SITE_NAME: text(
    'wharf',
    '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$',
    'SITE_NAME must be 1-63 letters, digits, dots, dashes or underscores',
  ),
  ADMIN_USERNAME: text(
    'admin',
    '^[A-Za-z0-9@._+-]{1,128}$',
    'ADMIN_USERNAME may hold only letters, digits and @._+- (1-128 characters)',
  ),
  ADMIN_PASSWORD: Type.Optional(
    Type.String({ minLength: 8, errorMessage: 'ADMIN_PASSWORD must be at least 8 characters' }),
  ),
  SESSION_IDLE_MINUTES: int(360, 1, 525600),
  AUTH_CACHE_SECONDS: int(2, 0, 300),
  LOG_LEVEL: Type.Unsafe<string>({
    type: 'string',
    enum: LOG_LEVELS,
    default: 'info',
    errorMessage: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`,
  }),
  TRUST_PROXY: bool(false),
  RATE_LIMIT_PER_SECOND: int(50, 1, 1_000_000),
  RATE_LIMIT_BURST: int(200, 1, 10_000_000),
  RATE_LIMIT_CONCURRENT: int(100, 1, 100_000),
  LOGIN_MAX_FAILURES: int(5, 1, 1000),
  LOGIN_WINDOW_MINUTES: int(15, 1, 1440),
  LOGIN_DEFENDER_SAFE_LIST: text(''),
  LOGIN_DEFENDER_THRESHOLD: int(20, 1, 1_000_000),
  LOGIN_DEFENDER_WINDOW_MINUTES: int(15, 1, 10_080),
  LOGIN_DEFENDER_BAN_MINUTES: int(15, 1, 525_600),
  BODY_LIMIT_BYTES: int(1_048_576, 1024, 1_073_741_824),
  HTTP_HEADERS_TIMEOUT_MS: int(30_000, 100, 600_000),
  HTTP_IDLE_TIMEOUT_MS: int(120_000, 100, 3_600_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(72_000, 100, 3_600_000),
  HTTP_MIN_BODY_BYTES_PER_SECOND: int(1024, 0, 1_073_741_824),
  HTTP_BODY_RATE_WINDOW_MS: int(30_000, 100, 3_600_000),
  APPS_FILE: Type.Optional(text()),
  WEB_DIR: Type.Optional(text()),
  UPLOAD_PART_SIZE: int(5 * 1024 * 1024, 1024, 5 * 1024 * 1024 * 1024),
  UPLOAD_URL_SECONDS: int(3600, 10, 7 * 86400),
  UPLOAD_EXPIRY_MINUTES: int(1440, 1, 30 * 1440),
  PROTOCOL_UPLOAD_EXPIRY_SECONDS: int(120, 4, 86400),
  DOWNLOAD_URL_SECONDS: int(3600, 10, 7 * 86400),
  JANITOR_INTERVAL_SECONDS: int(300, 1, 86400),
  FILE_EXPIRATION_INTERVAL_SECONDS: int(900, 1, 86400),
  FILE_EXPIRATION_BATCH_SIZE: int(500, 1, 10_000),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(text()),
  WEBHOOK_ALLOWED_CIDRS: text(''),
  WEBHOOK_CONNECT_TIMEOUT_MS: int(5000, 10, 60_000),
  WEBHOOK_TIMEOUT_MS: int(15_000, 10, 120_000),
  WEBHOOK_CONCURRENCY: int(64, 1, 1024),
  WEBHOOK_LOG_RETENTION_DAYS: int(90, 1, 36500),
  WEBHOOK_DISABLE_AFTER_DAYS: int(5, 1, 36500),
  WEBHOOK_ALERT_URL: Type.Optional(text()),
  WEBHOOK_ORDER_HOLD_ATTEMPTS: int(4, 0, 101),
  DAV_ENABLED: bool(true),
  DAV_PREFIX: Type.Optional(text()),
  DAV_AUTH_CACHE_SECONDS: int(300, 0, 3600),
  SHUTDOWN_TIMEOUT_SECONDS: int(30, 1, 3600),
  METRICS_ENABLED: bool(false),
  METRICS_HOST: text('127.0.0.1'),
  METRICS_PORT: int(9464, 0, 65535),
  METRICS_TOKEN: Type.Optional(text()),
  SFTP_ENABLED: bool(true),
  SFTP_HOST: Type.Optional(text()),
  SFTP_PORT: int(2022, 0, 65535),
  SFTP_HOST_KEY_FILES: text(''),
  SFTP_LOGIN_TIMEOUT_MS: int(30_000, 100, 600_000),
  SFTP_IDLE_TIMEOUT_MS: int(600_000, 100, 86_400_000),
  SFTP_MAX_SESSIONS_PER_USER: int(20, 1, 10_000),
  SFTP_MAX_SESSIONS_PER_IP: int(50, 1, 100_000),
  SFTP_MAX_BUFFERED_BYTES_PER_CONNECTION: int(16 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
  SFTP_MAX_BUFFERED_BYTES_PER_USER: int(64 * 1024 * 1024, 1024 * 1024, 16 * 1024 ** 3),
  BLOB_STORE: Type.Unsafe<'disk' | 's3'>({
    type: 'string',
    enum: ['disk', 's3'],
    default: 'disk',
    errorMessage: 'BLOB_STORE must be disk or s3 (got "{got}")',
  }),
  S3_ENDPOINT: Type.Optional(
    text(undefined, '^https?://[^/]', 'S3_ENDPOINT must be an http(s) URL (got "{got}")'),
  ),
  S3_BUCKET: text(''),
  S3_PREFIX: text(''),
  S3_REGION: Type.Optional(text()),
  AWS_REGION: Type.Optional(text()),
  S3_FORCE_PATH_STYLE: bool(false),
  S3_TRANSFER_MODE: Type.Unsafe<'direct' | 'proxy'>({
    type: 'string',
    enum: ['direct', 'proxy'],
    default: 'direct',
    errorMessage: 'S3_TRANSFER_MODE must be direct or proxy (got "{got}")',
  }),
  EXPORT_RETENTION_DAYS: int(7, 1, 36500),
  EXPORT_CONCURRENCY: int(2, 1, 64),
  EXPORT_PAGE_SIZE: int(5000, 1, 100_000),
  EXPORT_LEASE_SECONDS: int(60, 1, 86400),
  CHECKSUM_CONCURRENCY: int(2, 1, 64),
  CHECKSUM_POLL_MS: int(5000, 10, 3_600_000),
  CHECKSUM_LEASE_SECONDS: int(60, 1, 86400),
  // The URL's password must never be echoed: the message leaves the value out.
  SMTP_URL: Type.Optional(
    text(
      undefined,
      `^${anyCase('smtp')}s?://[^\\s/?#]`,
      'SMTP_URL must be an smtp:// or smtps:// URL, e.g. smtp://user:password@mail.example.com:587',
    ),
  ),
  MAIL_FROM: Type.Optional(text()),
  MAIL_RETENTION_DAYS: int(30, 1, 36500),
  SHARE_MAIL_LIMIT_PER_HOUR: int(100, 1, 1_000_000),
  ...FTP_SETTINGS,
})

/** The environment as the schema reads it: every setting, with its default where it has one. */
export type Settings = Static<typeof SETTINGS>

/**
 * The settings in `env` (empty means unset), validated against SETTINGS; every bad value is
 * reported at once, one problem per setting.
 */
function readSettings(env: Env, problems: string[]): Settings {
  const given: Record<string, string> = {}
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && value !== '') given[name] = value
  const failed = new Set<string>()
  try {
    return envSchema<Settings>({ schema: SETTINGS, data: given, env: false, ajv: settingsAjv })
  } catch (err) {
    const errors = (err as { errors?: { instancePath: string }[] }).errors
    if (!errors) throw err
    for (const e of errors) failed.add(e.instancePath.split('/')[1] ?? '')
  }
  // The bucket's settings count only where the bucket is used.
  const s3 = given['BLOB_STORE'] === 's3'
  for (const name of Object.keys(SETTINGS.properties)) {
    if (!failed.has(name) || (!s3 && name.startsWith('S3_'))) continue
    const schema = SETTINGS.properties[name as keyof Settings] as { errorMessage?: string }
    problems.push(
      (schema.errorMessage ?? '{name} is not valid (got "{got}")')
        .replace('{name}', name)
        .replace('{got}', given[name] ?? ''),
    )
  }
  // Defaults stand in for what failed, so that the checks after the schema still see the rest.
  const rest = Object.fromEntries(Object.entries(given).filter(([name]) => !failed.has(name)))
  return envSchema<Settings>({ schema: SETTINGS, data: rest, env: false, ajv: settingsAjv })
}

/** Reads and validates the configuration; every bad value is reported at once. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  const s = readSettings(env, problems)

  const host = s.HOST
  const port = s.PORT
  const dataDir = path.resolve(s.DATA_DIR)
  const defaultBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  const baseUrl = (s.BASE_URL ?? defaultBase).replace(/\/+$/, '')
  if (!URL.canParse(baseUrl) && !problems.some((p) => p.startsWith('BASE_URL '))) {
    problems.push(`BASE_URL must be an absolute http(s) URL (got "${baseUrl}")`)
  }

  const warnings: string[] = []
  if (env['LOGIN_MAX_ATTEMPTS_PER_IP'] !== undefined) {
    warnings.push(
      'LOGIN_MAX_ATTEMPTS_PER_IP is no longer used and is ignored: successful logins never count; failed ones are scored by the login defender (LOGIN_DEFENDER_THRESHOLD, LOGIN_DEFENDER_WINDOW_MINUTES, LOGIN_DEFENDER_BAN_MINUTES, LOGIN_DEFENDER_SAFE_LIST)',
    )
  }

  const config: Config = {
    warnings,
    host,
    port,
    dataDir,
    databaseUrl: s.DATABASE_URL,
    baseUrl,
    siteName: s.SITE_NAME,
    adminUsername: s.ADMIN_USERNAME,
    adminPassword: s.ADMIN_PASSWORD,
    sessionIdleMinutes: s.SESSION_IDLE_MINUTES,
    authCacheSeconds: s.AUTH_CACHE_SECONDS,
    logLevel: s.LOG_LEVEL,
    trustProxy: isTrue(s.TRUST_PROXY),
    rateLimit: {
      perSecond: s.RATE_LIMIT_PER_SECOND,
      burst: s.RATE_LIMIT_BURST,
      concurrent: s.RATE_LIMIT_CONCURRENT,
    },
    login: {
      maxFailuresPerUser: s.LOGIN_MAX_FAILURES,
      windowMinutes: s.LOGIN_WINDOW_MINUTES,
    },
    loginDefender: {
      safeList: parseSafeList(s.LOGIN_DEFENDER_SAFE_LIST, problems),
      threshold: s.LOGIN_DEFENDER_THRESHOLD,
      windowMinutes: s.LOGIN_DEFENDER_WINDOW_MINUTES,
      banMinutes: s.LOGIN_DEFENDER_BAN_MINUTES,
    },
    bodyLimitBytes: s.BODY_LIMIT_BYTES,
    http: {
      headersTimeoutMs: s.HTTP_HEADERS_TIMEOUT_MS,
      idleTimeoutMs: s.HTTP_IDLE_TIMEOUT_MS,
      keepAliveTimeoutMs: s.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      minBodyBytesPerSecond: s.HTTP_MIN_BODY_BYTES_PER_SECOND,
      bodyRateWindowMs: s.HTTP_BODY_RATE_WINDOW_MS,
    },
    appsFile: s.APPS_FILE === undefined ? undefined : path.resolve(s.APPS_FILE),
    webDir: path.resolve(s.WEB_DIR ?? DEFAULT_WEB_DIR),
    files: {
      partSize: s.UPLOAD_PART_SIZE,
      uploadUrlSeconds: s.UPLOAD_URL_SECONDS,
      uploadExpiryMinutes: s.UPLOAD_EXPIRY_MINUTES,
      protocolUploadExpirySeconds: s.PROTOCOL_UPLOAD_EXPIRY_SECONDS,
      downloadUrlSeconds: s.DOWNLOAD_URL_SECONDS,
      janitorIntervalSeconds: s.JANITOR_INTERVAL_SECONDS,
      expirationIntervalSeconds: s.FILE_EXPIRATION_INTERVAL_SECONDS,
      expirationBatchSize: s.FILE_EXPIRATION_BATCH_SIZE,
    },
    webhooks: {
      retrySchedule: parseRetrySchedule(s.WEBHOOK_RETRY_SCHEDULE, problems),
      allowedCidrs: parseCidrs(s.WEBHOOK_ALLOWED_CIDRS, problems),
      connectTimeoutMs: s.WEBHOOK_CONNECT_TIMEOUT_MS,
      totalTimeoutMs: s.WEBHOOK_TIMEOUT_MS,
      concurrency: s.WEBHOOK_CONCURRENCY,
      logRetentionDays: s.WEBHOOK_LOG_RETENTION_DAYS,
      disableAfterDays: s.WEBHOOK_DISABLE_AFTER_DAYS,
      alertUrl: parseAlertUrl(s.WEBHOOK_ALERT_URL, problems),
      orderHoldAttempts: s.WEBHOOK_ORDER_HOLD_ATTEMPTS,
    },
    dav: {
      enabled: isTrue(s.DAV_ENABLED),
      prefix: parseDavPrefix(s.DAV_PREFIX, problems),
      authCacheSeconds: s.DAV_AUTH_CACHE_SECONDS,
    },
    shutdownTimeoutMs: s.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    metrics: {
      enabled: isTrue(s.METRICS_ENABLED),
      host: s.METRICS_HOST,
      port: s.METRICS_PORT,
      token: s.METRICS_TOKEN === '' ? undefined : s.METRICS_TOKEN,
    },
    sftp: {
      enabled: isTrue(s.SFTP_ENABLED),
      host: s.SFTP_HOST ?? host,
      port: s.SFTP_PORT,
      hostKeyFiles: s.SFTP_HOST_KEY_FILES.split(',')
        .map((f) => f.trim())
        .filter((f) => f !== '')
        .map((f) => path.resolve(f)),
      loginTimeoutMs: s.SFTP_LOGIN_TIMEOUT_MS,
      idleTimeoutMs: s.SFTP_IDLE_TIMEOUT_MS,
      maxSessionsPerUser: s.SFTP_MAX_SESSIONS_PER_USER,
      maxSessionsPerIp: s.SFTP_MAX_SESSIONS_PER_IP,
      maxBufferedBytesPerConnection: s.SFTP_MAX_BUFFERED_BYTES_PER_CONNECTION,
      maxBufferedBytesPerUser: s.SFTP_MAX_BUFFERED_BYTES_PER_USER,
    },
    blobs: blobStore(s, env, problems),
    exports: {
      retentionDays: s.EXPORT_RETENTION_DAYS,
      concurrency: s.EXPORT_CONCURRENCY,
      pageSize: s.EXPORT_PAGE_SIZE,
      leaseSeconds: s.EXPORT_LEASE_SECONDS,
    },
    checksums: {
      concurrency: s.CHECKSUM_CONCURRENCY,
      pollMs: s.CHECKSUM_POLL_MS,
      leaseSeconds: s.CHECKSUM_LEASE_SECONDS,
    },
    ftp: ftpConfig(s, { host, dataDir }, problems),
    ...mailSettings(s, problems),
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function blobStore(s: Settings, env: Env, problems: string[]): Config['blobs'] {
  if (s.BLOB_STORE === 'disk') return { store: 'disk', s3: undefined }
  const bucket = s.S3_BUCKET
  // S3's rules for bucket names (3-63 lower-case letters, digits, dots and dashes).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    problems.push(
      bucket === ''
        ? 'S3_BUCKET is required when BLOB_STORE=s3'
        : `S3_BUCKET must be a bucket name: 3-63 lower-case letters, digits, dots or dashes (got "${bucket}")`,
    )
  }
  let prefix = s.S3_PREFIX.replace(/^\/+/, '')
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/'
  if (
    prefix.length > 512 ||
    prefix.split('/').some((segment, i, all) => segment === '' && i < all.length - 1)
  ) {
    problems.push(`S3_PREFIX must be up to 512 characters without empty segments (got "${env['S3_PREFIX']}")`)
  }
  return {
    store: 's3',
    s3: {
      endpoint: s.S3_ENDPOINT,
      // The SDK's own variable, then the region most S3-compatible servers accept.
      region: s.S3_REGION ?? s.AWS_REGION ?? 'us-east-1',
      bucket,
      prefix,
      forcePathStyle: isTrue(s.S3_FORCE_PATH_STYLE),
      transferMode: s.S3_TRANSFER_MODE,
    },
  }
}

/**
 * MAIL_FROM is `address` or `Name <address>`; its domain names the Message-IDs. Required with
 * SMTP_URL: mail needs a sender the operator chose.
 */
const MAIL_FROM = /^(?:[^<>]*<\s*([^<>\s@]+@([^<>\s@]+))\s*>|([^<>\s@]+@([^<>\s@]+)))$/

function mailSettings(s: Settings, problems: string[]): Pick<Config, 'smtpUrl' | 'mail'> {
  const smtpUrl = s.SMTP_URL
  if (smtpUrl !== undefined && !URL.canParse(smtpUrl)) {
    problems.push(
      'SMTP_URL must be an smtp:// or smtps:// URL, e.g. smtp://user:password@mail.example.com:587',
    )
  }
  const from = s.MAIL_FROM?.trim()
  const m = from === undefined ? null : MAIL_FROM.exec(from)
  if (from !== undefined && !m) {
    problems.push(`MAIL_FROM must be an address or "Name <address>" (got "${from}")`)
  } else if (smtpUrl !== undefined && from === undefined) {
    problems.push('MAIL_FROM is required when SMTP_URL is set')
  }
  return {
    smtpUrl,
    mail: {
      enabled: smtpUrl !== undefined,
      from: from ?? '',
      domain: (m?.[2] ?? m?.[4] ?? 'wharf.invalid').toLowerCase(),
      retentionDays: s.MAIL_RETENTION_DAYS,
      shareLimitPerHour: s.SHARE_MAIL_LIMIT_PER_HOUR,
    },
  }
}

/** After a failure: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts in all). */
export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000]

function parseRetrySchedule(raw: string | undefined, problems: string[]): number[] {
  if (raw === undefined || raw.trim() === '') return DEFAULT_RETRY_SCHEDULE
  const parts = raw.split(',').map((s) => s.trim())
  if (parts.length > 100 || !parts.every((s) => /^\d+(\.\d+)?$/.test(s) && Number(s) <= 604_800)) {
    problems.push(
      `WEBHOOK_RETRY_SCHEDULE must be up to 100 comma-separated delays in seconds, each at most 604800 (got "${raw}")`,
    )
    return DEFAULT_RETRY_SCHEDULE
  }
  return parts.map(Number)
}

/** Paths the rest of the server already answers: WebDAV cannot take them over. */
const RESERVED_PREFIXES = ['/api', '/assets']

function parseDavPrefix(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw.trim() === '') return '/dav'
  const prefix = raw.trim().replace(/\/+$/, '')
  const taken = RESERVED_PREFIXES.some(
    (r) => prefix.toLowerCase() === r || prefix.toLowerCase().startsWith(`${r}/`),
  )
  const dots = prefix.split('/').some((seg) => seg === '.' || seg === '..')
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(prefix) || taken || dots) {
    problems.push(
      `DAV_PREFIX must be a URL path such as /dav (letters, digits and ._~- between slashes), not / or under /api or /assets (got "${raw}")`,
    )
    return '/dav'
  }
  return prefix
}

function parseCidrs(raw: string, problems: string[]): string[] {
  if (raw.trim() === '') return []
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  for (const c of list) {
    if (!isCidr(c))
      problems.push(`WEBHOOK_ALLOWED_CIDRS holds "${c}", which is not an address range like 127.0.0.0/8`)
  }
  return list
}

/**
 * LOGIN_DEFENDER_SAFE_LIST: addresses and CIDR ranges the login defender never bans, as ranges
 * (a lone address becomes a /32 or /128). Only plain dotted IPv4 and IPv6 text is taken.
 */
function parseSafeList(raw: string, problems: string[]): string[] {
  const out: string[] = []
  for (const entry of raw.split(',').map((s) => s.trim())) {
    if (entry === '') continue
    const [addr = '', prefix, extra] = entry.split('/')
    const family = net.isIP(addr)
    const bits = family === 4 ? 32 : 128
    const okPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
    if (family === 0 || !okPrefix || extra !== undefined) {
      problems.push(
        `LOGIN_DEFENDER_SAFE_LIST holds "${entry}", which is not an address or range like 192.0.2.7 or 10.0.0.0/8`,
      )
      continue
    }
    const lone = ipaddr.process(addr)
    out.push(
      prefix === undefined
        ? `${lone.toString()}/${lone.kind() === 'ipv4' ? 32 : 128}`
        : `${ipaddr.parse(addr).toString()}/${Number(prefix)}`,
    )
  }
  return out
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text)
    return true
  } catch {
    return false
  }
}

/** WEBHOOK_ALERT_URL: an http(s) URL, or nothing. */
function parseAlertUrl(value: string | undefined, problems: string[]): string | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const url = URL.canParse(value) ? new URL(value) : null
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    problems.push(
      'WEBHOOK_ALERT_URL must be an http:// or https:// URL, e.g. https://ops.example.com/wharf-alerts',
    )
    return undefined
  }
  return value.trim()
}
