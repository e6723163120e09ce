import type { AccessService } from './access/access-service.js'
import type { ApiKeyService } from './api-keys/api-key-service.js'
import type { AppService } from './apps/app-service.js'
import type { AuthService } from './auth/auth-service.js'
import type { ProtocolLogin } from './auth/protocol-login.js'
import type { BehaviorService } from './behaviors/behavior-service.js'
import type { BillingLedger } from './billing/billing-ledger.js'
import type { BillingService } from './billing/billing-service.js'
import type { BundleMailService } from './bundles/bundle-mail-service.js'
import type { BundleRecordService } from './bundles/bundle-record-service.js'
import type { BundleService } from './bundles/bundle-service.js'
import type { BundleVisitorService } from './bundles/bundle-visitor-service.js'
import type { InboxService } from './bundles/inbox-service.js'
import type { ExportService } from './exports/export-service.js'
import type { DownloadService } from './files/download-service.js'
import type { FileAccess } from './files/file-access.js'
import type { FileOperations } from './files/file-operations.js'
import type { FolderService } from './files/folder-service.js'
import type { UploadService } from './files/upload-service.js'
import type { FileSystem } from './files/vfs/file-system.js'
import type { ZipDownloadService } from './files/zip-download-service.js'
import type { GroupService } from './groups/group-service.js'
import type { HistoryService } from './history/history-service.js'
import type { LoginDefender } from './login-defender/login-defender.js'
import type { PasswordPolicy } from './passwords/password-policy.js'
import type { PermissionService } from './permissions/permission-service.js'
import type { PublicKeyService } from './public-keys/public-key-service.js'
import type { SessionService } from './sessions/session-service.js'
import type { BillingContactService } from './sites/billing-contact.js'
import type { SiteRow } from './sites/site-service.js'
import type { SiteSettingsService } from './sites/site-settings-service.js'
import type { HostKeyService } from './ssh/host-key-service.js'
import type { TwoFactorService } from './two-factor/two-factor-service.js'
import type { UserService } from './users/user-service.js'
import type { EventFeedService } from './webhooks/event-feed.js'
import type { WebhookEndpointService } from './webhooks/webhook-endpoint-service.js'
import type { WebhookService } from './webhooks/webhook-service.js'
import type { WebhookSettingsService } from './webhooks/webhook-settings.js'

/** Every service the front ends call, built by the composition root (container.ts). */
export interface Services {
  auth: AuthService
  apiKeys: ApiKeyService
  sessions: SessionService
  users: UserService
  permissions: PermissionService
  /** Groups of users and their members (GroupUser). */
  groups: GroupService
  /** What a caller may do where in the file tree. */
  fileAccess: FileAccess
  /** Uploads: action=put/end and the signed part URLs. */
  uploads: UploadService
  /** File metadata, signed download links and the bytes behind them. */
  downloads: DownloadService
  /** A user's files and folders as one streamed ZIP (POST /file_actions/zip_download). */
  zipDownloads: ZipDownloadService
  /** Folder listings and mkdir. */
  folders: FolderService
  /** Delete, copy and move of files and folders. */
  fileOps: FileOperations
  /** The file tree as the transfer protocols (SFTP, FTP, WebDAV) see it, over the services above. */
  fileSystem: FileSystem
  /** Password (or API key) logins of the transfer protocols, with the rules of POST /sessions. */
  protocolLogin: ProtocolLogin
  /** Protocol rights, address limits and the end of access, applied at every login. */
  access: AccessService
  /** Users' SSH public keys (GET/POST /public_keys), for SFTP logins by key. */
  publicKeys: PublicKeyService
  behaviors: BehaviorService
  /** Share links, their owners' side (GET/POST/PATCH/DELETE /bundles). */
  bundles: BundleService
  /** Share links sent by e-mail (share, BundleRecipient) and BundleNotification. */
  bundleMail: BundleMailService
  /** Share links, their recipients' side (the public API under /public/bundles). */
  bundleVisitors: BundleVisitorService
  /** What recipients did: GET /bundle_registrations, /bundle_downloads, /bundle_actions. */
  bundleRecords: BundleRecordService
  /** Inboxes (write-only share links): GET/POST /inbox_recipients, GET /inbox_registrations, /inbox_uploads. */
  inboxes: InboxService
  /** The SFTP server's host keys, generated on first use (GET /sftp_host_keys). */
  hostKeys: HostKeyService
  /** The /history endpoints: recent actions. */
  history: HistoryService
  /** GET/PATCH /webhook_settings: the site's listener, read fresh by the dispatcher. */
  webhookSettings: WebhookSettingsService
  /** POST /webhook_settings/test and the retry of failed webhook requests. */
  webhooks: WebhookService
  /** Webhook endpoints: health, pause and limits, recovery and attempts. */
  webhookEndpoints: WebhookEndpointService
  /** GET /events and /events/{id}/attempts: the webhook events, pulled. */
  events: EventFeedService
  /** GET /invoices and /payments, and the PDFs behind their links. */
  billing: BillingService
  /** Invoices and payments recorded by operators (`wharf billing`). */
  billingLedger: BillingLedger
  /** GET /apps: the integration catalog, read from its file at start-up. */
  apps: AppService
  /** Webhook-log and history exports: creation, status, results and their CSV. */
  exports: ExportService
  /** Failed logins per client address and the bans they lead to (GET/DELETE /banned_addresses). */
  loginDefender: LoginDefender
  /** The site's password rules and who must change their password first. */
  passwords: PasswordPolicy
  /** GET/PATCH /site: the site's settings (its password rules). */
  site: SiteSettingsService
  /** GET/PATCH /site: the site's billing contact (billing_permission). */
  billingContact: BillingContactService
  /** Two-factor sign-in: TOTP methods, recovery codes and who must use them. */
  twoFactor: TwoFactorService
}

/**
 * What a front end is handed: the services, the site it serves and the clock. Front ends never
 * see the composition root itself (its database, stores or workers).
 */
export interface FrontEndContext {
  services: Services
  site: SiteRow
  now: () => number
}
