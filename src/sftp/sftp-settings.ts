/** The SFTP front end's settings (config.ts reads them from the environment). */
export interface SftpSettings {
  enabled: boolean
  host: string
  /** 0: any free port (tests). */
  port: number
  /** Private host key files; empty: ed25519 and RSA keys generated once under DATA_DIR/sftp. */
  hostKeyFiles: string[]
  /** A connection must have logged in within this long. */
  loginTimeoutMs: number
  /** A connection with no SFTP request for this long is closed. */
  idleTimeoutMs: number
  maxSessionsPerUser: number
  maxSessionsPerIp: number
  /**
   * Bytes of WRITE data one connection may hold before they reach the file (queued behind a write
   * in progress, or ahead of a gap), and one user across their connections; past either, a WRITE
   * is answered FAILURE.
   */
  maxBufferedBytesPerConnection: number
  maxBufferedBytesPerUser: number
}
