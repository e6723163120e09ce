import type { Logger } from 'pino'
import type { FrontEnd, Listen, PortSpec } from '../connections/front-end.js'
import type { FrontEndContext } from '../modules/services.js'
import type { HostKeys } from '../modules/ssh/host-keys.js'
import type { SftpServer } from './sftp-server.js'
import type { SftpSettings } from './sftp-settings.js'

/** The port SFTP listens on, and the settings that name it. */
export function sftpPort(cfg: SftpSettings): PortSpec {
  return { setting: 'SFTP_PORT', hostSetting: 'SFTP_HOST', host: cfg.host, port: cfg.port }
}

/**
 * The SFTP server as one of `wharf serve`'s front ends. Its modules (and ssh2) load when it
 * starts: a server without SFTP does not hold them.
 */
export function sftpFrontEnd(
  c: FrontEndContext & { hostKeys: HostKeys },
  cfg: SftpSettings,
  logger: Logger,
): FrontEnd {
  let sftp: SftpServer | null = null
  const started = () => {
    if (!sftp) throw new Error('SFTP has not started')
    return sftp
  }
  return {
    name: 'sftp',
    port: sftpPort(cfg),
    async start(listen: Listen) {
      const { startSftp } = await import('./sftp-server.js')
      sftp = await startSftp(c, cfg, logger, listen)
    },
    address() {
      const { host, port } = started()
      return { host, port }
    },
    describe() {
      const { host, port, hostKeys } = started()
      return [
        {
          fields: {
            address: `${host}:${port}`,
            hostKeys: hostKeys.map((k) => `${k.type} SHA256:${k.fingerprintSha256}`),
          },
          message: 'SFTP is listening',
        },
      ]
    },
    cut() {
      sftp?.cut()
    },
    async close() {
      await sftp?.close()
    },
  }
}
