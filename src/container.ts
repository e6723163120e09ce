import path from 'node:path'
import { type Kysely, sql } from 'kysely'
import type { Logger } from 'pino'
import { BlobJanitor } from './blobs/blob-janitor.js'
import type { BlobStore } from './blobs/blob-store.js'
import { LocalBlobStore } from './blobs/disk/local-blob-store.js'
import { guardStorageFull } from './blobs/storage-full-guard.js'
import { ChecksumWorker } from './checksums/checksum-worker.js'
import { type Config, DEFAULT_RETRY_SCHEDULE } from './config.js'
import { type DatabaseHandle, openDatabase } from './db/database.js'
import type { Database, ExportKind } from './db/schema.js'
import { ExportBuilder } from './exports/export-builder.js'
import type { ExportSource } from './exports/export-kind.js'
import { EXPORT_KINDS } from './exports/export-kinds.js'
import { ExportRetention } from './exports/export-retention.js'
import { ExportWorker } from './exports/export-worker.js'
import { historySource } from './exports/history-export.js'
import { webhookLogSource } from './exports/webhook-log-export.js'
import { RateLimiter } from './http/rate-limiter.js'
import { Readiness } from './http/readiness.js'
import { IdentityCache } from './identity/identity-cache.js'
import { JobLease } from './jobs/job-lease.js'
import { MailRetention } from './mail/mail-retention.js'
import { MailWorker } from './mail/mail-worker.js'
import { metrics } from './metrics/metrics.js'
import { AccessRepository } from './modules/access/access-repository.js'
import { AccessService } from './modules/access/access-service.js'
import { HeldActions } from './modules/actions/held-actions.js'
import { ApiKeyService } from './modules/api-keys/api-key-service.js'
import { loadAppCatalog } from './modules/apps/app-catalog.js'
import { AppService } from './modules/apps/app-service.js'
import { AuthService } from './modules/auth/auth-service.js'
import { ProtocolLogin } from './modules/auth/protocol-login.js'
import { BehaviorService } from './modules/behaviors/behavior-service.js'
import { FileExpiration, retentionActor } from './modules/behaviors/file-expiration.js'
import { FolderRules } from './modules/behaviors/folder-rules.js'
import { UserFolders } from './modules/behaviors/user-folders.js'
import { BillingLedger } from './modules/billing/billing-ledger.js'
import { BillingService } from './modules/billing/billing-service.js'
import { BundleMailService } from './modules/bundles/bundle-mail-service.js'
import { BundleRecordService } from './modules/bundles/bundle-record-service.js'
import { BundleService } from './modules/bundles/bundle-service.js'
import { BundleVisitorService } from './modules/bundles/bundle-visitor-service.js'
import { InboxService } from './modules/bundles/inbox-service.js'
import { ExportService } from './modules/exports/export-service.js'
import { DownloadService } from './modules/files/download-service.js'
import { FileAccess } from './modules/files/file-access.js'
import { FileExpiry } from './modules/files/file-expiry.js'
import { FileOperations } from './modules/files/file-operations.js'
import { FolderService } from './modules/files/folder-service.js'
import { UploadParts } from './modules/files/upload-parts.js'
import { UploadService } from './modules/files/upload-service.js'
import { FileSystem } from './modules/files/vfs/file-system.js'
import { ZipDownloadService } from './modules/files/zip-download-service.js'
import { GroupService } from './modules/groups/group-service.js'
import { HistoryService } from './modules/history/history-service.js'
import { LoginDefender } from './modules/login-defender/login-defender.js'
import { PasswordPolicy } from './modules/passwords/password-policy.js'
import { PermissionService } from './modules/permissions/permission-service.js'
import { PublicKeyService } from './modules/public-keys/public-key-service.js'
import { createRepositories, type Repositories } from './modules/repositories.js'
import { ServerKeys } from './modules/server-keys/server-keys.js'
import type { Services } from './modules/services.js'
import { SessionService } from './modules/sessions/session-service.js'
import { BillingContactService } from './modules/sites/billing-contact.js'
import { type BootstrapResult, bootstrapSite, type SiteRow } from './modules/sites/site-service.js'
import { SiteSettingsService } from './modules/sites/site-settings-service.js'
import { HostKeyService } from './modules/ssh/host-key-service.js'
import { HostKeys } from './modules/ssh/host-keys.js'
import { TwoFactorService } from './modules/two-factor/two-factor-service.js'
import { UserService } from './modules/users/user-service.js'
import { EventFeedService } from './modules/webhooks/event-feed.js'
import { WebhookEndpointService } from './modules/webhooks/webhook-endpoint-service.js'
import { WebhookService } from './modules/webhooks/webhook-service.js'
import { WebhookSettingsService } from './modules/webhooks/webhook-settings.js'
import { SiteSecrets } from './security/site-secrets.js'
import { AddressGuard, type Resolver } from './webhooks/address-guard.js'
import { type EndpointAlerts, EndpointHealth } from './webhooks/endpoints/endpoint-health.js'
import { RetryPolicy } from './webhooks/retry-policy.js'
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.js'
import { WebhookLogRetention } from './webhooks/webhook-log-retention.js'
import { WebhookSender } from './webhooks/webhook-sender.js'

/** A worker's readiness: running, and its last look for work did not fail. */
const workerPart = (name: string, worker: { health: { running: boolean; lastLookFailed: boolean } }) => ({
  name,
  check: () => {
    const { running, lastLookFailed } = worker.health
    if (!running) return 'not running'
    return lastLookFailed ? 'its last look for work failed (see the log)' : null
  },
})

/** The outboxes' depths and the database pool, read when metrics are scraped; the remover. */
function measureQueues(database: DatabaseHandle): () => void {
  const { db } = database
  const oldest = (row: { depth: number | string | bigint; oldest: number | string | null } | undefined) => ({
    depth: Number(row?.depth ?? 0),
    oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
  })
  const removers = [
    metrics.webhookQueueSources.add(async () => [
      {
        endpoint: 'site',
        ...oldest(
          await db
            .selectFrom('webhook_notifications')
            .select((eb) => [eb.fn.countAll().as('depth'), eb.fn.min('created_at').as('oldest')])
            .where('state', '=', 'pending')
            .executeTakeFirst(),
        ),
      },
    ]),
    metrics.mailQueueSources.add(async () =>
      oldest(
        await db
          .selectFrom('mail_outbox')
          .select((eb) => [eb.fn.countAll().as('depth'), eb.fn.min('created_at').as('oldest')])
          .where('state', '=', 'queued')
          .executeTakeFirst(),
      ),
    ),
  ]
  const pool = database.poolStats
  if (pool) removers.push(metrics.poolSources.add(pool))
  return () => {
    for (const remove of removers) remove()
  }
}

/** What `GET /readyz` asks of the database, the blob store and the outboxes' workers. */
function readinessOf(
  database: DatabaseHandle,
  blobs: BlobStore,
  workers: Record<string, { health: { running: boolean; lastLookFailed: boolean } }>,
): Readiness {
  const readiness = new Readiness()
    .add({
      name: 'database',
      check: async () => {
        await sql`select 1`.execute(database.db)
        return null
      },
    })
    .add({
      name: 'blob_store',
      // The size of a key no blob has: one stat or HEAD, the store's cheapest question.
      check: async () => {
        await blobs.size('00000000000000000000000000000000')
        return null
      },
    })
  for (const [name, worker] of Object.entries(workers)) readiness.add(workerPart(name, worker))
  return readiness
}

/** The composition root: one database, the services on it, and how to close them. */
export interface Container {
  config: Config
  database: DatabaseHandle
  db: Kysely<Database>
  /** Where file bytes live (local disk under DATA_DIR/storage, or an S3 bucket: BLOB_STORE). */
  blobs: BlobStore
  /** Deletes orphaned blobs and abandoned uploads; tests call `janitor.runOnce()`. */
  janitor: BlobJanitor
  site: SiteRow
  bootstrap: BootstrapResult
  services: Services
  rateLimiter: RateLimiter
  /** The SFTP server's host keys (private keys included, for the SSH server). */
  hostKeys: HostKeys
  /** The server's key sets every node shares (host keys, the generated FTP certificate). */
  serverKeys: ServerKeys
  /** Outbound webhooks: the outbox's dispatcher and the log's retention job. */
  webhooks: { dispatcher: WebhookDispatcher; retention: WebhookLogRetention; sender: WebhookSender }
  /** Export builds (claimed with a lease) and the deletion of old exports. */
  exports: { worker: ExportWorker; retention: ExportRetention }
  /** Computes the md5 and CRC-32 of uploads after they commit. */
  checksums: ChecksumWorker
  /** Deletes the files past the retention of file_expiration behaviors; tests call `runOnce()`. */
  fileExpiration: FileExpiration
  /** The mail outbox's sender (null without SMTP_URL) and the deletion of old messages. */
  mail: { worker: MailWorker | null; retention: MailRetention }
  /** What `GET /readyz` asks: the database, the blob store, the workers, the front ends. */
  readiness: Readiness
  now: () => number
  /** Starts the background work (janitor, webhook delivery, export builds, checksums, mail, retention) once the server listens. */
  startBackground(): Promise<void>
  close(): Promise<void>
}

export type { Services }

export interface ContainerOptions {
  now?: () => number
  /** PostgreSQL schema (tests isolate themselves in one). */
  databaseSchema?: string
  sqliteFile?: string
  logger?: Logger
  /** DNS for webhook listeners (tests inject one; never a real lookup of a test name). */
  resolver?: Resolver
  /** Where exports read their records (tests inject a failing or slow one). */
  exportSources?: Partial<Record<ExportKind, ExportSource>>
  /** Wraps the blob store (tests inject a disk that fills up). */
  wrapBlobStore?: (store: BlobStore) => BlobStore
  /** Bytes per upload part of a protocol writer (tests make it small to stage several parts). */
  writerPartBytes?: number
}

const HOUR = 3600_000

/**
 * The store BLOB_STORE names; start-up says which, and where (never with credentials). The S3
 * store's modules, and the AWS SDK with them (about 35 MiB resident), load only when it is chosen.
 */
export async function openBlobStore(
  config: Config,
  logger: Logger | undefined,
  now: () => number,
): Promise<{ store: BlobStore; close(): void }> {
  const storage = path.join(config.dataDir, 'storage')
  const s3 = config.blobs.s3
  if (config.blobs.store === 's3' && s3) {
    logger?.info(
      {
        blobStore: 's3',
        endpoint: s3.endpoint ?? 'AWS',
        region: s3.region,
        bucket: s3.bucket,
        prefix: s3.prefix,
        transferMode: s3.transferMode,
      },
      'file bytes are stored in an S3 bucket',
    )
    const [{ S3BlobStore }, { S3DirectBlobStore }, { createS3Client }] = await Promise.all([
      import('./blobs/s3/s3-blob-store.js'),
      import('./blobs/s3/s3-direct-store.js'),
      import('./blobs/s3/s3-client.js'),
    ])
    const client = createS3Client(s3)
    const options = { client, bucket: s3.bucket, prefix: s3.prefix, tmpDir: path.join(storage, 'tmp') }
    // Direct: clients send and fetch bytes with presigned URLs of the bucket; proxy: through Wharf.
    const store =
      s3.transferMode === 'direct' ? new S3DirectBlobStore({ ...options, now }) : new S3BlobStore(options)
    // Its kept-alive connections to the object store go with the container.
    return { store, close: () => client.destroy() }
  }
  logger?.info({ blobStore: 'disk', path: storage }, 'file bytes are stored on the local disk')
  return { store: new LocalBlobStore(storage), close: () => undefined }
}

export async function createContainer(config: Config, opts: ContainerOptions = {}): Promise<Container> {
  const now = opts.now ?? Date.now
  // A bad APPS_FILE stops start-up before the database is touched.
  const apps = loadAppCatalog(config.appsFile)
  const database = openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    schema: opts.databaseSchema,
    ...(opts.sqliteFile ? { sqliteFile: opts.sqliteFile } : {}),
  })
  try {
    await database.migrate()
    const repos = createRepositories(database.db, database.dialect)
    const bootstrap = await bootstrapSite(repos.sites, repos.users, config, now())
    const identities = new IdentityCache(config.authCacheSeconds * 1000)
    const secrets = new SiteSecrets(repos.sites)
    const loginDefender = new LoginDefender(repos.loginDefender, config.loginDefender, secrets, now)
    const passwords = new PasswordPolicy(repos.passwords, now)
    const twoFactor = new TwoFactorService(repos.twoFactor, secrets, () => config.siteName, now)
    const access = new AccessService(
      new AccessRepository(database.db, database.dialect),
      loginDefender,
      config.authCacheSeconds * 1000,
      now,
      identities,
    )
    const sessions = new SessionService(
      repos.sessions,
      repos.users,
      config,
      loginDefender,
      now,
      passwords,
      access,
      twoFactor,
    )
    const { store, close: closeBlobStore } = await openBlobStore(config, opts.logger, now)
    const blobs = guardStorageFull(opts.wrapBlobStore ? opts.wrapBlobStore(store) : store)
    const heldReads = new HeldActions(opts.logger)
    const workers = createWorkers(config, database, repos, blobs, now, opts)
    const serverKeys = new ServerKeys(repos.serverKeys, now)
    const hostKeys = new HostKeys(
      path.join(config.dataDir, 'sftp'),
      config.sftp.hostKeyFiles,
      serverKeys,
      opts.logger,
    )
    const services = createServices({
      config,
      repos,
      blobs,
      now,
      opts,
      db: database.db,
      apps,
      identities,
      secrets,
      loginDefender,
      sessions,
      passwords,
      twoFactor,
      heldReads,
      hostKeys,
      workers,
      access,
    })
    const unmeasure = measureQueues(database)
    return {
      config,
      database,
      db: database.db,
      blobs,
      janitor: workers.janitor,
      site: bootstrap.site,
      bootstrap,
      services,
      rateLimiter: new RateLimiter(config.rateLimit, now),
      hostKeys,
      serverKeys,
      webhooks: { dispatcher: workers.dispatcher, retention: workers.retention, sender: workers.sender },
      exports: { worker: workers.exportWorker, retention: workers.exportRetention },
      checksums: workers.checksums,
      fileExpiration: workers.fileExpiration,
      mail: { worker: workers.mailWorker, retention: workers.mailRetention },
      readiness: readinessOf(database, blobs, {
        webhooks: workers.dispatcher,
        exports: workers.exportWorker,
        checksums: workers.checksums,
        ...(workers.mailWorker ? { mail: workers.mailWorker } : {}),
      }),
      now,
      startBackground: () => startWorkers(config, workers, opts.logger),
      close: async () => {
        unmeasure()
        // Background work first: what is in progress finishes before the database closes under it.
        await stopWorkers(workers)
        await services.webhookEndpoints.statistics.settled()
        heldReads.stop()
        closeBlobStore()
        await database.close()
      },
    }
  } catch (err) {
    await database.close()
    throw err
  }
}

/** The background workers: blob janitor, webhook delivery and log retention, export builds and retention, checksums. */
type Workers = ReturnType<typeof createWorkers>

function createWorkers(
  config: Config,
  database: DatabaseHandle,
  repos: Repositories,
  blobs: BlobStore,
  now: () => number,
  opts: ContainerOptions,
) {
  const { db } = database
  // Jobs one process at a time runs (the others find the lease taken and skip their pass); one
  // that dies mid-run holds its lease a minute at most.
  const turns = (name: string) => new JobLease(db, name, { leaseMs: 60_000, now })
  const janitor = new BlobJanitor(db, blobs, now, { logger: opts.logger, lease: turns('blob-janitor') })
  const hooks = config.webhooks
  const sender = new WebhookSender({
    allowedCidrs: hooks.allowedCidrs,
    connectTimeoutMs: hooks.connectTimeoutMs,
    totalTimeoutMs: hooks.totalTimeoutMs,
    maxConnections: hooks.concurrency,
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
  })
  const retryPolicy = new RetryPolicy(hooks.retrySchedule)
  // Well past the longest a request may take: no other worker sends a notification while it
  // is out (45 s with the default timeouts).
  const leaseMs = 2 * (hooks.connectTimeoutMs + hooks.totalTimeoutMs) + 5000
  const listen = database.listen
  // Who hears of an endpoint disabled or enabled again: the site's admins by mail (when the
  // server sends mail) and the operational webhook.
  const endpointAlerts: EndpointAlerts = {
    mail: config.smtpUrl !== undefined,
    mailDomain: config.mail.domain,
    url: hooks.alertUrl,
    send: (req) => sender.send(req),
    logger: opts.logger,
  }
  const endpointHealth = new EndpointHealth(db, hooks.disableAfterDays * 86_400_000, endpointAlerts)
  const linkSecrets = new SiteSecrets(repos.sites)
  const dispatcher = new WebhookDispatcher(db, sender, retryPolicy, now, {
    health: endpointHealth,
    fileLinks: { secret: (siteId) => linkSecrets.signingSecret(siteId), baseUrl: () => config.baseUrl },
    concurrency: hooks.concurrency,
    leaseMs,
    orderHold: hooks.orderHoldAttempts,
    // One process owns a SQLite file: claims left by a crash are void at once.
    releaseClaimsOnStart: database.dialect.singleProcess,
    sqlite: database.sqlite,
    prepared: database.prepared,
    logger: opts.logger,
    ...(listen
      ? { listen: (onNotify: () => void) => listen((schema) => `wharf_webhooks_${schema}`, onNotify) }
      : {}),
  })
  const retention = new WebhookLogRetention(db, hooks.logRetentionDays, now, opts.logger).takeTurns(
    turns('webhook-log-retention'),
  )
  const exportSources: Record<ExportKind, ExportSource> = {
    webhook_log: webhookLogSource(database),
    history: historySource(database),
    ...opts.exportSources,
  }
  const exportWorker = new ExportWorker(
    db,
    new ExportBuilder(blobs, EXPORT_KINDS, exportSources, config.exports.pageSize),
    blobs,
    now,
    {
      concurrency: config.exports.concurrency,
      leaseMs: config.exports.leaseSeconds * 1000,
      releaseClaimsOnStart: database.dialect.singleProcess,
      logger: opts.logger,
    },
  )
  const exportRetention = new ExportRetention(db, config.exports.retentionDays, now, opts.logger).takeTurns(
    turns('export-retention'),
  )
  const checksums = new ChecksumWorker(db, blobs, now, {
    concurrency: config.checksums.concurrency,
    leaseMs: config.checksums.leaseSeconds * 1000,
    pollMs: config.checksums.pollMs,
    releaseClaimsOnStart: database.dialect.singleProcess,
    logger: opts.logger,
  })
  const mailWorker = config.smtpUrl
    ? new MailWorker(db, {
        smtpUrl: config.smtpUrl,
        from: config.mail.from,
        concurrency: 4,
        // Well past the longest nodemailer waits on a server (its socket timeout is 10 min).
        leaseMs: 15 * 60_000,
        pollMs: 30_000,
        // The webhooks' default: 8 attempts over about 33 hours.
        retrySchedule: DEFAULT_RETRY_SCHEDULE,
        releaseClaimsOnStart: database.dialect.singleProcess,
        logger: opts.logger,
        now,
      })
    : null
  const mailRetention = new MailRetention(db, config.mail.retentionDays, now, opts.logger).takeTurns(
    turns('mail-retention'),
  )
  const fileExpiration = new FileExpiration(
    repos.behaviors,
    new FileExpiry({ files: repos.files, folders: repos.folders }, retentionActor),
    turns('file-expiration'),
    { batchSize: config.files.expirationBatchSize, now, logger: opts.logger },
  )
  return {
    janitor,
    fileExpiration,
    sender,
    mailWorker,
    mailRetention,
    retryPolicy,
    leaseMs,
    dispatcher,
    endpointAlerts,
    retention,
    exportWorker,
    exportRetention,
    checksums,
  }
}

/** Starts the background work once the server listens. */
async function startWorkers(config: Config, w: Workers, logger: Logger | undefined): Promise<void> {
  w.janitor.start(config.files.janitorIntervalSeconds * 1000)
  w.fileExpiration.start(config.files.expirationIntervalSeconds * 1000)
  w.retention.start(HOUR)
  w.exportRetention.start(HOUR)
  await w.dispatcher.start()
  await w.exportWorker.start()
  await w.checksums.start()
  if (w.mailWorker) {
    const smtp = new URL(config.smtpUrl!)
    logger?.info({ smtpHost: smtp.host, from: config.mail.from }, 'mail is sent through SMTP')
    w.mailRetention.start(HOUR)
    await w.mailWorker.start()
  }
}

/** Stops the background work; what is in progress finishes first. */
async function stopWorkers(w: Workers): Promise<void> {
  await w.mailWorker?.stop()
  await w.mailRetention.stop()
  await w.checksums.stop()
  await w.exportWorker.stop()
  await w.exportRetention.stop()
  await w.dispatcher.stop()
  await w.sender.close()
  await w.retention.stop()
  await w.fileExpiration.stop()
  await w.janitor.stop()
}

/** What the services are built from. */
interface ServiceParts {
  config: Config
  repos: Repositories
  blobs: BlobStore
  now: () => number
  opts: ContainerOptions
  db: Kysely<Database>
  apps: ReturnType<typeof loadAppCatalog>
  identities: IdentityCache
  secrets: SiteSecrets
  loginDefender: LoginDefender
  sessions: SessionService
  passwords: PasswordPolicy
  twoFactor: TwoFactorService
  heldReads: HeldActions
  hostKeys: HostKeys
  workers: Workers
  access: AccessService
}

/** The modules' services, over the repositories, the blob store and the workers they queue work for. */
function createServices(p: ServiceParts): Services {
  const {
    config,
    repos,
    blobs,
    now,
    opts,
    apps,
    identities,
    secrets,
    loginDefender,
    sessions,
    passwords,
    twoFactor,
    heldReads,
    hostKeys,
    access,
  } = p
  const { dispatcher, retryPolicy, leaseMs, endpointAlerts } = p.workers
  const { db } = p
  const fileAccess = new FileAccess(repos.permissions)
  const folderRules = new FolderRules(repos.behaviors)
  const userFolders = new UserFolders(repos.behaviors, repos.files, repos.permissions)
  const auth = new AuthService(repos.apiKeys, repos.users, repos.sessions, config, now, identities, access)
  const fileRepos = { files: repos.files, folders: repos.folders }
  const uploads = new UploadService(
    { files: repos.files, uploads: repos.uploads },
    blobs,
    new UploadParts(repos.uploads, blobs, secrets, config, now),
    fileAccess,
    folderRules,
    now,
  )
  const downloads = new DownloadService(
    repos.files,
    repos.users,
    blobs,
    secrets,
    fileAccess,
    config,
    now,
    heldReads,
  )
  const zipDownloads = new ZipDownloadService(
    repos.files,
    repos.users,
    fileAccess,
    downloads,
    secrets,
    config,
    now,
  )
  const folders = new FolderService(fileRepos, fileAccess, secrets, now, folderRules)
  const fileOps = new FileOperations(fileRepos, blobs, fileAccess, folderRules, now)
  const bundles = new BundleService(
    repos.bundles,
    repos.users,
    fileAccess,
    secrets,
    () => config.baseUrl,
    now,
  )
  const bundleMail = new BundleMailService(
    repos.bundleMail,
    bundles,
    repos.users,
    secrets,
    () => ({ mail: config.mail, siteName: config.siteName, baseUrl: config.baseUrl }),
    now,
  )
  const guard = new AddressGuard(config.webhooks.allowedCidrs)
  const webhookSettings = new WebhookSettingsService(repos.webhookSettings, guard, now)
  return {
    auth,
    apiKeys: new ApiKeyService(repos.apiKeys, repos.users, config, secrets, now, identities),
    sessions,
    users: new UserService(repos.users, sessions, secrets, now, identities, userFolders, passwords),
    permissions: new PermissionService(repos.permissions, repos.users, repos.groups, secrets, now),
    groups: new GroupService(repos.groups, secrets, now, userFolders, identities),
    uploads,
    downloads,
    zipDownloads,
    fileAccess,
    folders,
    fileOps,
    fileSystem: new FileSystem({
      folders,
      downloads,
      uploads,
      fileOps,
      fileAccess,
      blobs,
      now,
      writerPartBytes: opts.writerPartBytes,
      writerExpirySeconds: config.files.protocolUploadExpirySeconds,
    }),
    protocolLogin: new ProtocolLogin(repos.users, auth, sessions, loginDefender, now, access),
    access,
    publicKeys: new PublicKeyService(repos.publicKeys, repos.users, secrets, now),
    behaviors: new BehaviorService(repos.behaviors, repos.permissions, secrets, guard, now, userFolders),
    bundles,
    bundleMail,
    bundleVisitors: new BundleVisitorService(
      repos.bundles,
      repos.bundleVisits,
      repos.users,
      repos.files,
      fileAccess,
      folders,
      downloads,
      uploads,
      loginDefender,
      secrets,
      () => config.baseUrl,
      now,
      (db, input) => bundleMail.queueNotifications(db, input),
    ),
    bundleRecords: new BundleRecordService(repos.bundleVisits, secrets),
    inboxes: new InboxService(repos.inboxes, repos.bundles, bundleMail, secrets),
    hostKeys: new HostKeyService(hostKeys),
    history: new HistoryService(repos.history, fileAccess, secrets, now),
    webhookSettings,
    webhooks: new WebhookService(db, webhookSettings, dispatcher, retryPolicy, leaseMs, now),
    webhookEndpoints: new WebhookEndpointService(
      db,
      secrets,
      repos.permissions,
      retryPolicy,
      endpointAlerts,
      now,
    ),
    events: new EventFeedService(db, secrets),
    billing: new BillingService(repos.billing, config, secrets, now),
    billingLedger: new BillingLedger(repos.billing, now),
    apps: new AppService(apps, secrets, () => config.baseUrl),
    exports: new ExportService(repos.exports, repos.users, blobs, secrets, () => config.baseUrl, now),
    loginDefender,
    passwords,
    site: new SiteSettingsService(repos.sites, passwords, now),
    billingContact: new BillingContactService(repos.sites, now),
    twoFactor,
  }
}
