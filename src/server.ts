import type http from 'node:http'
import type { Logger } from 'pino'
import { buildApp } from './app.js'
import { bindPorts } from './cli/bound-ports.js'
import type { Config } from './config.js'
import { createContainer } from './container.js'
import type { FtpServer } from './ftp/ftp-server.js'
import { createLogger } from './logger.js'
import type { SftpServer } from './sftp/sftp-server.js'

/** Starts the HTTP server and stops it gracefully on SIGTERM/SIGINT. */
export async function serve(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<void> {
  for (const warning of config.warnings ?? []) logger.warn(warning)
  // Every port first, and the object store's abilities: a start that cannot serve stops before
  // it creates the site and its administrator (whose generated password is shown only once).
  const ports = await bindPorts([
    { setting: 'PORT', hostSetting: 'HOST', host: config.host, port: config.port, allowHalfOpen: true },
    ...(config.sftp.enabled
      ? [{ setting: 'SFTP_PORT', hostSetting: 'SFTP_HOST', host: config.sftp.host, port: config.sftp.port }]
      : []),
    ...(config.ftp.enabled
      ? [{ setting: 'FTP_PORT', hostSetting: 'FTP_HOST', host: config.ftp.host, port: config.ftp.port }]
      : []),
    ...(config.metrics.enabled
      ? [
          {
            setting: 'METRICS_PORT',
            hostSetting: 'METRICS_HOST',
            host: config.metrics.host,
            port: config.metrics.port,
          },
        ]
      : []),
  ])
  const bound = (setting: string) => {
    const found = ports.find((p) => p.spec.setting === setting)
    if (!found) throw new Error(`${setting} was not bound`)
    return found
  }
  if (config.blobs.store === 's3' && config.blobs.s3) {
    const { checkS3Store } = await import('./blobs/s3/s3-store-check.js')
    await checkS3Store(config.blobs.s3)
  }
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
  const { readiness } = container
  readiness.expectFrontEnd('http')
  if (config.sftp.enabled) readiness.expectFrontEnd('sftp')
  if (config.ftp.enabled) readiness.expectFrontEnd('ftp')
  let sftp: SftpServer | null = null
  let ftp: FtpServer | null = null
  let metricsListener: http.Server | null = null
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing in-flight requests')
    // A load balancer asking /readyz sends no new work here while the rest finishes.
    readiness.listening('http', false)
    // Fastify closes the keep-alive connections that are idle when closing starts; one whose last
    // response is still finishing goes idle a moment later and would hold the close open for the
    // whole keep-alive timeout (72 s). Sweeping idle connections until closed ends those too.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100)
    try {
      metricsListener?.close()
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
  // Each front end's modules load only when it is on: a server without SFTP or FTP does not
  // hold their code. HTTP is served last, so that an answer over HTTP means every front end
  // listens; a connection that comes earlier waits for its front end.
  if (config.sftp.enabled) {
    const { startSftp } = await import('./sftp/sftp-server.js')
    sftp = await startSftp(container, config.sftp, logger, (server) => bound('SFTP_PORT').handTo(server))
    readiness.listening('sftp')
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
      listen: (server) => bound('FTP_PORT').handTo(server),
    })
    readiness.listening('ftp')
    const { host, port } = ftp.address()
    logger.info(
      { address: `${host}:${port}`, tls: 'explicit (AUTH TLS)', certificateSha256: ftp.fingerprint },
      'FTP is listening',
    )
  }
  if (config.metrics.enabled) {
    const { metricsServer } = await import('./http/metrics-listener.js')
    metricsListener = metricsServer(config.metrics.token)
    const port = bound('METRICS_PORT')
    await port.handTo(metricsListener)
    logger.info(
      { address: `${config.metrics.host}:${port.port}`, token: config.metrics.token ? 'required' : 'none' },
      'metrics are served at /metrics',
    )
  }
  await app.ready()
  await bound('PORT').handTo(app.server)
  readiness.listening('http')
  await container.startBackground()
  logger.info(
    { url: config.baseUrl, database: container.database.dialect.name, dataDir: config.dataDir },
    'Wharf is listening',
  )
  if (config.dav.enabled) logger.info({ url: `${config.baseUrl}${config.dav.prefix}/` }, 'WebDAV is served')
}
