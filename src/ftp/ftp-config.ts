import net from 'node:net'
import path from 'node:path'
import { type Static, type TObject, Type } from '@sinclair/typebox'
import { bool, int, isTrue, text } from '../api/setting-kinds.js'

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

/** The FTP_* settings, part of config.ts's SETTINGS. */
export const FTP_SETTINGS = {
  FTP_ENABLED: bool(false),
  FTP_HOST: Type.Optional(text()),
  FTP_PORT: int(2121, 0, 65535),
  FTP_PASV_PORTS: text(''),
  FTP_PASV_ADDRESS: Type.Optional(text()),
  FTP_TLS_CERT: Type.Optional(text()),
  FTP_TLS_KEY: Type.Optional(text()),
  FTP_REQUIRE_TLS: bool(false),
  FTP_LOGIN_TIMEOUT_SECONDS: int(60, 1, 3600),
  FTP_IDLE_TIMEOUT_SECONDS: int(900, 1, 86400),
  FTP_DATA_TIMEOUT_SECONDS: int(30, 1, 3600),
  FTP_MAX_SESSIONS_PER_USER: int(10, 1, 10_000),
  FTP_MAX_SESSIONS_PER_IP: int(20, 1, 10_000),
}

type FtpSettings = Static<TObject<typeof FTP_SETTINGS>>

/** The FTP settings as Wharf uses them; problems are added to the list `loadConfig` reports at once. */
export function ftpConfig(
  s: FtpSettings,
  at: { host: string; dataDir: string },
  problems: string[],
): FtpConfig {
  const passiveAddress = s.FTP_PASV_ADDRESS ?? null
  if (passiveAddress !== null && !net.isIPv4(passiveAddress)) {
    problems.push(
      `FTP_PASV_ADDRESS must be an IPv4 address, as PASV can only announce one (got "${passiveAddress}")`,
    )
  }
  const certFile = s.FTP_TLS_CERT
  const keyFile = s.FTP_TLS_KEY
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push(
      'FTP_TLS_CERT and FTP_TLS_KEY go together: set both, or neither for a generated certificate',
    )
  }
  return {
    enabled: isTrue(s.FTP_ENABLED),
    host: s.FTP_HOST ?? at.host,
    port: s.FTP_PORT,
    passivePorts: parsePortRange(s.FTP_PASV_PORTS, problems),
    passiveAddress,
    tls: certFile && keyFile ? { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) } : null,
    tlsDir: path.join(at.dataDir, 'ftp'),
    requireTls: isTrue(s.FTP_REQUIRE_TLS),
    loginTimeoutMs: s.FTP_LOGIN_TIMEOUT_SECONDS * 1000,
    idleTimeoutMs: s.FTP_IDLE_TIMEOUT_SECONDS * 1000,
    dataTimeoutMs: s.FTP_DATA_TIMEOUT_SECONDS * 1000,
    maxSessionsPerUser: s.FTP_MAX_SESSIONS_PER_USER,
    maxSessionsPerIp: s.FTP_MAX_SESSIONS_PER_IP,
  }
}

function parsePortRange(raw: string, problems: string[]): { min: number; max: number } | null {
  if (raw.trim() === '') return null
  const m = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(raw)
  const min = Number(m?.[1])
  const max = Number(m?.[2])
  if (!m || min < 1024 || max > 65535 || min > max) {
    problems.push(`FTP_PASV_PORTS must be a range like 50000-50100 within 1024-65535 (got "${raw}")`)
    return null
  }
  return { min, max }
}
