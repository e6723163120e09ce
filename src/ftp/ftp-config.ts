import net from 'node:net'
import path from 'node:path'

/** The FTP/FTPS front end's settings (README, "Configuration"). */
export interface FtpConfig {
  enabled: boolean
  host: string
  port: number
  /** Ports passive data connections listen on; null: any free port. */
  passivePorts: { min: number; max: number } | null
  /** The IPv4 address PASV announces; null: the address the client reached the server on. */
  passiveAddress: string | null
  /** A certificate and key from files; null: the self-signed pair kept under `tlsDir`. */
  tls: { certFile: string; keyFile: string } | null
  /** Where the generated certificate lives. */
  tlsDir: string
  /** Plain-text logins and unprotected data connections are refused. */
  requireTls: boolean
  /** A connection must log in within this long. */
  loginTimeoutMs: number
  /** A logged-in connection with no command (and no transfer) for this long is closed. */
  idleTimeoutMs: number
  /** A passive listener nobody connects to is closed after this long (and the transfer fails). */
  dataTimeoutMs: number
  maxSessionsPerUser: number
  maxSessionsPerIp: number
}

interface Readers {
  host: string
  dataDir: string
  str: (name: string, fallback: string) => string
  int: (name: string, fallback: number, min: number, max: number) => number
  bool: (name: string, fallback: boolean) => boolean
}

/** Reads the FTP_* variables; problems are added to the list `loadConfig` reports at once. */
export function loadFtpConfig(
  env: Record<string, string | undefined>,
  r: Readers,
  problems: string[],
): FtpConfig {
  const passiveAddress = env['FTP_PASV_ADDRESS'] || null
  if (passiveAddress !== null && !net.isIPv4(passiveAddress)) {
    problems.push(
      `FTP_PASV_ADDRESS must be an IPv4 address, as PASV can only announce one (got "${passiveAddress}")`,
    )
  }
  const certFile = env['FTP_TLS_CERT'] || undefined
  const keyFile = env['FTP_TLS_KEY'] || undefined
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push(
      'FTP_TLS_CERT and FTP_TLS_KEY go together: set both, or neither for a generated certificate',
    )
  }
  return {
    enabled: r.bool('FTP_ENABLED', false),
    host: r.str('FTP_HOST', r.host),
    port: r.int('FTP_PORT', 2121, 0, 65535),
    passivePorts: parsePortRange(env['FTP_PASV_PORTS'], problems),
    passiveAddress,
    tls: certFile && keyFile ? { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) } : null,
    tlsDir: path.join(r.dataDir, 'ftp'),
    requireTls: r.bool('FTP_REQUIRE_TLS', false),
    loginTimeoutMs: r.int('FTP_LOGIN_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
    idleTimeoutMs: r.int('FTP_IDLE_TIMEOUT_SECONDS', 900, 1, 86400) * 1000,
    dataTimeoutMs: r.int('FTP_DATA_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
    maxSessionsPerUser: r.int('FTP_MAX_SESSIONS_PER_USER', 10, 1, 10_000),
    maxSessionsPerIp: r.int('FTP_MAX_SESSIONS_PER_IP', 20, 1, 10_000),
  }
}

function parsePortRange(raw: string | undefined, problems: string[]): { min: number; max: number } | null {
  if (raw === undefined || raw.trim() === '') return null
  const m = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(raw)
  const min = Number(m?.[1])
  const max = Number(m?.[2])
  if (!m || min < 1024 || max > 65535 || min > max) {
    problems.push(`FTP_PASV_PORTS must be a range like 50000-50100 within 1024-65535 (got "${raw}")`)
    return null
  }
  return { min, max }
}
