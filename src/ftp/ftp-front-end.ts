import type { Logger } from 'pino'
import type { FrontEnd, Listen, PortSpec } from '../connections/front-end.js'
import type { ServerKeys } from '../modules/server-keys/server-keys.js'
import type { FrontEndContext } from '../modules/services.js'
import type { FtpConfig } from './ftp-config.js'
import type { FtpServer } from './ftp-server.js'

/** The port FTP listens on, and the settings that name it. */
export function ftpPort(config: FtpConfig): PortSpec {
  return { setting: 'FTP_PORT', hostSetting: 'FTP_HOST', host: config.host, port: config.port }
}

/**
 * The FTP server as one of `wharf serve`'s front ends. Its modules load when it starts: a server
 * without FTP does not hold them.
 */
export function ftpFrontEnd(
  c: FrontEndContext & { serverKeys: ServerKeys },
  config: FtpConfig,
  logger: Logger,
): FrontEnd {
  let ftp: FtpServer | null = null
  const started = () => {
    if (!ftp) throw new Error('FTP has not started')
    return ftp
  }
  return {
    name: 'ftp',
    port: ftpPort(config),
    async start(listen: Listen) {
      const { FtpServer } = await import('./ftp-server.js')
      ftp = await FtpServer.start({
        config,
        siteId: c.site.id,
        fileSystem: c.services.fileSystem,
        protocolLogin: c.services.protocolLogin,
        serverKeys: c.serverKeys,
        logger,
        listen,
      })
    },
    address: () => started().address(),
    describe() {
      const { host, port } = started().address()
      return [
        {
          fields: {
            address: `${host}:${port}`,
            tls: 'explicit (AUTH TLS)',
            certificateSha256: started().fingerprint,
          },
          message: 'FTP is listening',
        },
      ]
    },
    cut() {
      ftp?.cut()
    },
    async close() {
      await ftp?.close()
    },
  }
}
