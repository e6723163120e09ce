import type { Logger } from 'pino'
import { buildApp } from './app.js'
import type { Config } from './config.js'
import { createContainer } from './container.js'
import type { FtpServer } from './ftp/ftp-server.js'
import { createLogger } from './logger.js'
import type { SftpServer } from './sftp/sftp-server.js'

/** Starts the HTTP server and stops it gracefully on SIGTERM/SIGINT. */
export async function serve(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<void> {
  for (const warning of config.warnings ?? []) logger.warn(warning)
  const container = await createContainer(config, { logger })
  const { bootstrap } = container
  if (bootstrap.createdAdmin) {
    logger.info({ username: bootstrap.createdAdmin }, 'created the site administrator')
    if (bootstrap.generatedAdminPassword) {
      // Printed once, to stdout only: it is never logged or stored in clear.
      process.stdout.write(
        `\nWharf created the site administrator "${bootstrap.createdAdmin}" with the password:\n\n    ${bootstrap.generatedAdminPassword}\n\nIt is shown only this once. Set ADMIN_PASSWORD before the first start to choose it yourself.\n\n`,
      )
    }
  }
  const app = await buildApp(container, { logger })
  let sftp: SftpServer | null = null
  let ftp: FtpServer | null = null
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing in-flight requests')
    // Fastify closes the keep-alive connections that are idle when closing starts; one whose last
    // response is still finishing goes idle a moment later and would hold the close open for the
    // whole keep-alive timeout (72 s). Sweeping idle connections until closed ends those too.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100)
    try {
      await Promise.all([app.close(), sftp?.close(), ftp?.close()])
      clearInterval(sweep)
      logger.info('HTTP server closed; closing the database')
      await container.close()
      logger.info('stopped')
      process.exit(0)
    } catch (err) {
      clearInterval(sweep)
      logger.error({ err }, 'error while shutting down')
      process.exit(1)
    }
  }
  process.once('SIGTERM', () => void stop('SIGTERM'))
  process.once('SIGINT', () => void stop('SIGINT'))
  await app.listen({ host: config.host, port: config.port })
  // Each front end's modules load only when it is on: a server without SFTP or FTP does not
  // hold their code.
  if (config.sftp.enabled) {
    const { startSftp } = await import('./sftp/sftp-server.js')
    sftp = await startSftp(container, config.sftp, logger)
    const hostKeys = sftp.hostKeys.map((k) => `${k.type} SHA256:${k.fingerprintSha256}`)
    logger.info({ address: `${sftp.host}:${sftp.port}`, hostKeys }, 'SFTP is listening')
  }
  if (config.ftp.enabled) {
    const { FtpServer } = await import('./ftp/ftp-server.js')
    ftp = await FtpServer.start({
      config: config.ftp,
      siteId: container.site.id,
      fileSystem: container.services.fileSystem,
      protocolLogin: container.services.protocolLogin,
      serverKeys: container.serverKeys,
      logger,
    })
    const { host, port } = ftp.address()
    logger.info(
      { address: `${host}:${port}`, tls: 'explicit (AUTH TLS)', certificateSha256: ftp.fingerprint },
      'FTP is listening',
    )
  }
  await container.startBackground()
  logger.info(
    { url: config.baseUrl, database: container.database.dialect.name, dataDir: config.dataDir },
    'Wharf is listening',
  )
  if (config.dav.enabled) logger.info({ url: `${config.baseUrl}${config.dav.prefix}/` }, 'WebDAV is served')
}
