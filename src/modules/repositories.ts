import type { Kysely } from 'kysely'
import type { SqlDialect } from '../db/dialects/dialect.js'
import type { Database } from '../db/schema.js'
import { ApiKeyRepository } from './api-keys/api-key-repository.js'
import { BehaviorRepository } from './behaviors/behavior-repository.js'
import { BillingRepository } from './billing/billing-repository.js'
import { BundleMailRepository } from './bundles/bundle-mail-repository.js'
import { BundleRepository } from './bundles/bundle-repository.js'
import { BundleVisitRepository } from './bundles/bundle-visit-repository.js'
import { InboxRepository } from './bundles/inbox-repository.js'
import { ExportRepository } from './exports/export-repository.js'
import { FileRepository } from './files/file-repository.js'
import { FolderRepository } from './files/folder-repository.js'
import { UploadRepository } from './files/upload-repository.js'
import { GroupRepository } from './groups/group-repository.js'
import { HistoryRepository } from './history/history-repository.js'
import { LoginDefenderRepository } from './login-defender/login-defender-repository.js'
import { PasswordRepository } from './passwords/password-repository.js'
import { PermissionRepository } from './permissions/permission-repository.js'
import { PublicKeyRepository } from './public-keys/public-key-repository.js'
import { ServerKeyRepository } from './server-keys/server-key-repository.js'
import { SessionRepository } from './sessions/session-repository.js'
import { SiteRepository } from './sites/site-repository.js'
import { TwoFactorRepository } from './two-factor/two-factor-repository.js'
import { UserRepository } from './users/user-repository.js'
import { WebhookSettingsRepository } from './webhooks/webhook-settings-repository.js'

/** One repository per module that owns tables, on one connection and its dialect. */
export interface Repositories {
  sites: SiteRepository
  users: UserRepository
  sessions: SessionRepository
  apiKeys: ApiKeyRepository
  permissions: PermissionRepository
  groups: GroupRepository
  billing: BillingRepository
  history: HistoryRepository
  publicKeys: PublicKeyRepository
  behaviors: BehaviorRepository
  bundles: BundleRepository
  bundleMail: BundleMailRepository
  bundleVisits: BundleVisitRepository
  inboxes: InboxRepository
  exports: ExportRepository
  serverKeys: ServerKeyRepository
  webhookSettings: WebhookSettingsRepository
  loginDefender: LoginDefenderRepository
  passwords: PasswordRepository
  twoFactor: TwoFactorRepository
  files: FileRepository
  folders: FolderRepository
  uploads: UploadRepository
}

export function createRepositories(db: Kysely<Database>, dialect: SqlDialect): Repositories {
  const files = new FileRepository(db, dialect)
  return {
    sites: new SiteRepository(db, dialect),
    users: new UserRepository(db, dialect),
    sessions: new SessionRepository(db, dialect),
    apiKeys: new ApiKeyRepository(db, dialect),
    permissions: new PermissionRepository(db, dialect),
    groups: new GroupRepository(db, dialect),
    billing: new BillingRepository(db, dialect),
    history: new HistoryRepository(db, dialect),
    publicKeys: new PublicKeyRepository(db, dialect),
    behaviors: new BehaviorRepository(db, dialect),
    bundles: new BundleRepository(db, dialect, files),
    bundleMail: new BundleMailRepository(db, dialect),
    bundleVisits: new BundleVisitRepository(db, dialect),
    inboxes: new InboxRepository(db, dialect),
    exports: new ExportRepository(db, dialect),
    serverKeys: new ServerKeyRepository(db, dialect),
    webhookSettings: new WebhookSettingsRepository(db, dialect),
    loginDefender: new LoginDefenderRepository(db, dialect),
    passwords: new PasswordRepository(db, dialect),
    twoFactor: new TwoFactorRepository(db, dialect),
    files,
    folders: new FolderRepository(db, dialect),
    uploads: new UploadRepository(db, dialect),
  }
}
