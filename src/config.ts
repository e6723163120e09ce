import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ipaddr from 'ipaddr.js'
import type { DavSettings } from './dav/dav-settings.js'
import { type FtpConfig, loadFtpConfig } from './ftp/ftp-config.js'
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
  }
  /** WebDAV under the HTTP server (decisions.md, "WebDAV"). */
  dav: DavSettings
  /** The SFTP front end (docs/decisions.md, "SFTP"). */
  sftp: SftpSettings
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

/** Reads and validates the configuration; every bad value is reported at once. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  const str = (name: string, fallback: string): string => {
    const v = env[name]
    return v === undefined || v === '' ? fallback : v
  }
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`)
      return fallback
    }
    return Number(raw)
  }
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    problems.push(`${name} must be true or false (got "${raw}")`)
    return fallback
  }

  const host = str('HOST', '127.0.0.1')
  const port = int('PORT', 8080, 0, 65535)
  const dataDir = path.resolve(str('DATA_DIR', './data'))

  const databaseUrl = env['DATABASE_URL'] || undefined
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql:// (leave it unset for SQLite)')
  }

  const defaultBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  const baseUrl = str('BASE_URL', defaultBase).replace(/\/+$/, '')
  try {
    const u = new URL(baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme')
  } catch {
    problems.push(`BASE_URL must be an absolute http(s) URL (got "${baseUrl}")`)
  }

  const siteName = str('SITE_NAME', 'wharf')
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(siteName)) {
    problems.push('SITE_NAME must be 1-63 letters, digits, dots, dashes or underscores')
  }
  const adminUsername = str('ADMIN_USERNAME', 'admin')
  if (!/^[A-Za-z0-9@._+-]{1,128}$/.test(adminUsername)) {
    problems.push('ADMIN_USERNAME may hold only letters, digits and @._+- (1-128 characters)')
  }
  const adminPassword = env['ADMIN_PASSWORD'] || undefined
  if (adminPassword !== undefined && adminPassword.length < 8) {
    problems.push('ADMIN_PASSWORD must be at least 8 characters')
  }

  const logLevel = str('LOG_LEVEL', 'info')
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  const retrySchedule = parseRetrySchedule(env['WEBHOOK_RETRY_SCHEDULE'], problems)
  const allowedCidrs = parseCidrs(env['WEBHOOK_ALLOWED_CIDRS'], problems)

  const blobs = parseBlobStore(env, str, bool, problems)

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
    databaseUrl,
    baseUrl,
    siteName,
    adminUsername,
    adminPassword,
    sessionIdleMinutes: int('SESSION_IDLE_MINUTES', 360, 1, 525600),
    authCacheSeconds: int('AUTH_CACHE_SECONDS', 2, 0, 300),
    logLevel,
    trustProxy: bool('TRUST_PROXY', false),
    rateLimit: {
      perSecond: int('RATE_LIMIT_PER_SECOND', 50, 1, 1_000_000),
      burst: int('RATE_LIMIT_BURST', 200, 1, 10_000_000),
      concurrent: int('RATE_LIMIT_CONCURRENT', 100, 1, 100_000),
    },
    login: {
      maxFailuresPerUser: int('LOGIN_MAX_FAILURES', 5, 1, 1000),
      windowMinutes: int('LOGIN_WINDOW_MINUTES', 15, 1, 1440),
    },
    loginDefender: {
      safeList: parseSafeList(env['LOGIN_DEFENDER_SAFE_LIST'], problems),
      threshold: int('LOGIN_DEFENDER_THRESHOLD', 20, 1, 1_000_000),
      windowMinutes: int('LOGIN_DEFENDER_WINDOW_MINUTES', 15, 1, 10_080),
      banMinutes: int('LOGIN_DEFENDER_BAN_MINUTES', 15, 1, 525_600),
    },
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1_048_576, 1024, 1_073_741_824),
    http: {
      headersTimeoutMs: int('HTTP_HEADERS_TIMEOUT_MS', 30_000, 100, 600_000),
      idleTimeoutMs: int('HTTP_IDLE_TIMEOUT_MS', 120_000, 100, 3_600_000),
      keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
      minBodyBytesPerSecond: int('HTTP_MIN_BODY_BYTES_PER_SECOND', 1024, 0, 1_073_741_824),
      bodyRateWindowMs: int('HTTP_BODY_RATE_WINDOW_MS', 30_000, 100, 3_600_000),
    },
    appsFile: env['APPS_FILE'] ? path.resolve(env['APPS_FILE']) : undefined,
    webDir: path.resolve(env['WEB_DIR'] || DEFAULT_WEB_DIR),
    files: {
      partSize: int('UPLOAD_PART_SIZE', 5 * 1024 * 1024, 1024, 5 * 1024 * 1024 * 1024),
      uploadUrlSeconds: int('UPLOAD_URL_SECONDS', 3600, 10, 7 * 86400),
      uploadExpiryMinutes: int('UPLOAD_EXPIRY_MINUTES', 1440, 1, 30 * 1440),
      protocolUploadExpirySeconds: int('PROTOCOL_UPLOAD_EXPIRY_SECONDS', 120, 4, 86400),
      downloadUrlSeconds: int('DOWNLOAD_URL_SECONDS', 3600, 10, 7 * 86400),
      janitorIntervalSeconds: int('JANITOR_INTERVAL_SECONDS', 300, 1, 86400),
    },
    webhooks: {
      retrySchedule,
      allowedCidrs,
      connectTimeoutMs: int('WEBHOOK_CONNECT_TIMEOUT_MS', 5000, 10, 60_000),
      totalTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 15_000, 10, 120_000),
      concurrency: int('WEBHOOK_CONCURRENCY', 64, 1, 1024),
      logRetentionDays: int('WEBHOOK_LOG_RETENTION_DAYS', 90, 1, 36500),
    },
    dav: {
      enabled: bool('DAV_ENABLED', true),
      prefix: parseDavPrefix(env['DAV_PREFIX'], problems),
      authCacheSeconds: int('DAV_AUTH_CACHE_SECONDS', 300, 0, 3600),
    },
    sftp: {
      enabled: bool('SFTP_ENABLED', true),
      host: str('SFTP_HOST', host),
      port: int('SFTP_PORT', 2022, 0, 65535),
      hostKeyFiles: (env['SFTP_HOST_KEY_FILES'] ?? '')
        .split(',')
        .map((f) => f.trim())
        .filter((f) => f !== '')
        .map((f) => path.resolve(f)),
      loginTimeoutMs: int('SFTP_LOGIN_TIMEOUT_MS', 30_000, 100, 600_000),
      idleTimeoutMs: int('SFTP_IDLE_TIMEOUT_MS', 600_000, 100, 86_400_000),
      maxSessionsPerUser: int('SFTP_MAX_SESSIONS_PER_USER', 20, 1, 10_000),
      maxSessionsPerIp: int('SFTP_MAX_SESSIONS_PER_IP', 50, 1, 100_000),
      maxBufferedBytesPerConnection: int(
        'SFTP_MAX_BUFFERED_BYTES_PER_CONNECTION',
        16 * 1024 * 1024,
        1024 * 1024,
        1024 * 1024 * 1024,
      ),
      maxBufferedBytesPerUser: int(
        'SFTP_MAX_BUFFERED_BYTES_PER_USER',
        64 * 1024 * 1024,
        1024 * 1024,
        16 * 1024 ** 3,
      ),
    },
    blobs,
    exports: {
      retentionDays: int('EXPORT_RETENTION_DAYS', 7, 1, 36500),
      concurrency: int('EXPORT_CONCURRENCY', 2, 1, 64),
      pageSize: int('EXPORT_PAGE_SIZE', 5000, 1, 100_000),
      leaseSeconds: int('EXPORT_LEASE_SECONDS', 60, 1, 86400),
    },
    checksums: {
      concurrency: int('CHECKSUM_CONCURRENCY', 2, 1, 64),
      pollMs: int('CHECKSUM_POLL_MS', 5000, 10, 3_600_000),
      leaseSeconds: int('CHECKSUM_LEASE_SECONDS', 60, 1, 86400),
    },
    ftp: loadFtpConfig(env, { host, dataDir, int, bool, str }, problems),
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function parseBlobStore(
  env: Env,
  str: (name: string, fallback: string) => string,
  bool: (name: string, fallback: boolean) => boolean,
  problems: string[],
): Config['blobs'] {
  const store = str('BLOB_STORE', 'disk')
  if (store !== 'disk' && store !== 's3') {
    problems.push(`BLOB_STORE must be disk or s3 (got "${store}")`)
    return { store: 'disk', s3: undefined }
  }
  if (store === 'disk') return { store, s3: undefined }
  const endpoint = env['S3_ENDPOINT'] || undefined
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint)) {
    problems.push(`S3_ENDPOINT must be an http(s) URL (got "${endpoint}")`)
  }
  const bucket = str('S3_BUCKET', '')
  // S3's rules for bucket names (3-63 lower-case letters, digits, dots and dashes).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    problems.push(
      bucket === ''
        ? 'S3_BUCKET is required when BLOB_STORE=s3'
        : `S3_BUCKET must be a bucket name: 3-63 lower-case letters, digits, dots or dashes (got "${bucket}")`,
    )
  }
  let prefix = str('S3_PREFIX', '').replace(/^\/+/, '')
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/'
  if (
    prefix.length > 512 ||
    prefix.split('/').some((segment, i, all) => segment === '' && i < all.length - 1)
  ) {
    problems.push(`S3_PREFIX must be up to 512 characters without empty segments (got "${env['S3_PREFIX']}")`)
  }
  const transferMode = str('S3_TRANSFER_MODE', 'direct')
  if (transferMode !== 'direct' && transferMode !== 'proxy') {
    problems.push(`S3_TRANSFER_MODE must be direct or proxy (got "${transferMode}")`)
  }
  return {
    store,
    s3: {
      endpoint,
      // The SDK's own variable, then the region most S3-compatible servers accept.
      region: str('S3_REGION', env['AWS_REGION'] || 'us-east-1'),
      bucket,
      prefix,
      forcePathStyle: bool('S3_FORCE_PATH_STYLE', false),
      transferMode: transferMode === 'proxy' ? 'proxy' : 'direct',
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

function parseCidrs(raw: string | undefined, problems: string[]): string[] {
  if (raw === undefined || raw.trim() === '') return []
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
function parseSafeList(raw: string | undefined, problems: string[]): string[] {
  const out: string[] = []
  for (const entry of (raw ?? '').split(',').map((s) => s.trim())) {
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
