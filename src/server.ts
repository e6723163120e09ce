import type { Logger } from 'pino'
import { buildApp } from './app.js'
import { type BoundPort, bindPorts } from './cli/bound-ports.js'
import type { Config } from './config.js'
import type { FrontEnd, PortSpec } from './connections/front-end.js'
import { type Container, createContainer } from './container.js'
import { ftpFrontEnd, ftpPort } from './ftp/ftp-front-end.js'
import { httpFrontEnd, httpPort } from './http/http-front-end.js'
import { metricsFrontEnd, metricsPort } from './http/metrics-front-end.js'
import { createLogger } from './logger.js'
import { sftpFrontEnd, sftpPort } from './sftp/sftp-front-end.js'

/** Starts the HTTP server and stops it gracefully on SIGTERM/SIGINT. */
export async function serve(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<void> {
  for (const warning of config.warnings ?? []) logger.warn(warning)
  // Every port first, and the object store's abilities: a start that cannot serve stops before
  // it creates the site and its administrator (whose generated password is shown only once).
  const ports = await bindPorts(frontEndPorts(config))
  const bound = (spec: PortSpec): BoundPort => {
    const found = ports.find((p) => p.spec.setting === spec.setting)
    if (!found) throw new Error(`${spec.setting} was not bound`)
    return found
  }
  if (config.blobs.store === 's3' && config.blobs.s3) {
    const { checkS3Store } = await import('./blobs/s3/s3-store-check.js')
    await checkS3Store(config.blobs.s3)
  }
  const container = await createContainer(config, { logger })
  announceAdmin(container, logger)
  const frontEnds = await enabledFrontEnds(container, logger)
  for (const frontEnd of frontEnds) container.readiness.expectFrontEnd(frontEnd.name)
  stopOnSignals(frontEnds, container, logger)
  // HTTP is served last, so that an answer over HTTP means every front end listens; a
  // connection that comes earlier waits for its front end.
  for (const frontEnd of frontEnds) {
    await frontEnd.start((server) => bound(frontEnd.port).handTo(server))
    container.readiness.listening(frontEnd.name)
    // Background work (the janitor, webhooks, exports, checksums) starts once the server listens.
    if (frontEnd.name === 'http') await container.startBackground()
    for (const { fields, message } of frontEnd.describe()) logger.info(fields, message)
  }
}

/** The ports of the front ends the settings turn on: HTTP's, then SFTP's and FTP's. */
function frontEndPorts(config: Config): PortSpec[] {
  return [
    httpPort(config),
    ...(config.sftp.enabled ? [sftpPort(config.sftp)] : []),
    ...(config.ftp.enabled ? [ftpPort(config.ftp)] : []),
    ...(config.metrics.enabled ? [metricsPort(config.metrics)] : []),
  ]
}

/**
 * The front ends the settings turn on, in the order they start: HTTP last. SFTP's and FTP's
 * modules load only when they start: a server without them does not hold their code.
 */
async function enabledFrontEnds(container: Container, logger: Logger): Promise<FrontEnd[]> {
  const { config } = container
  const app = await buildApp(container, { logger })
  return [
    ...(config.sftp.enabled ? [sftpFrontEnd(container, config.sftp, logger)] : []),
    ...(config.ftp.enabled ? [ftpFrontEnd(container, config.ftp, logger)] : []),
    ...(config.metrics.enabled ? [metricsFrontEnd(config.metrics)] : []),
    httpFrontEnd(app, {
      host: config.host,
      port: config.port,
      url: () => config.baseUrl,
      database: container.database.dialect.name,
      dataDir: config.dataDir,
      davPrefix: config.dav.enabled ? config.dav.prefix : null,
    }),
  ]
}

function announceAdmin(container: Container, logger: Logger): void {
  const { bootstrap } = container
  if (!bootstrap.createdAdmin) return
  logger.info({ username: bootstrap.createdAdmin }, 'created the site administrator')
  if (bootstrap.generatedAdminPassword) {
    // Printed once, to stdout only: it is never logged or stored in clear.
    process.stdout.write(
      `\nWharf created the site administrator "${bootstrap.createdAdmin}" with the password:\n\n    ${bootstrap.generatedAdminPassword}\n\nIt is shown only this once. Set ADMIN_PASSWORD before the first start to choose it yourself.\n\n`,
    )
  }
}

/**
 * On SIGTERM or SIGINT: `/readyz` turns 503, every front end stops accepting and finishes what is
 * in flight (requests, transfers, protocol sessions) for up to SHUTDOWN_TIMEOUT_SECONDS, then the
 * background work stops (deliveries in flight end within their timeout, export builds and claims
 * are handed back) and the database closes. What is still open at the deadline is cut: an upload
 * cut short keeps the parts it stored, and resumes after the restart.
 */
/** After the deadline's cut, how long the cut requests and sessions get to finish their clean-up. */
const CUT_GRACE_MS = 5_000

function stopOnSignals(frontEnds: FrontEnd[], container: Container, logger: Logger): void {
  let stopping = false
  const deadline = container.config.shutdownTimeoutMs
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal, timeoutSeconds: deadline / 1000 }, 'shutting down: finishing in-flight requests')
    // A load balancer asking /readyz sends no new work here while the rest finishes.
    container.readiness.listening('http', false)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), deadline)
    })
    try {
      const closing = Promise.all(frontEnds.map((f) => f.close()))
      const closed = await Promise.race([closing.then(() => 'closed' as const), late])
      clearTimeout(timer)
      if (closed === 'late') {
        logger.warn('shutdown timeout: cutting the connections still open')
        // Their requests and sessions end as if the clients had gone, and finish their clean-up
        // (an upload cut short keeps the parts it stored) before the database closes under them.
        for (const f of frontEnds) f.cut()
        const unwound = await Promise.race([
          closing.then(() => true),
          new Promise<false>((resolve) => setTimeout(() => resolve(false), CUT_GRACE_MS).unref()),
        ])
        if (!unwound) logger.warn('connections cut but not all closed; closing the database anyway')
      }
      logger.info('front ends closed; stopping the background work and closing the database')
      await container.close()
      logger.info('stopped')
      process.exit(0)
    } catch (err) {
      logger.error({ err }, 'error while shutting down')
      process.exit(1)
    }
  }
  process.once('SIGTERM', () => void stop('SIGTERM'))
  process.once('SIGINT', () => void stop('SIGINT'))
}
