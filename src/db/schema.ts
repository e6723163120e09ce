import type { Generated } from 'kysely'

/**
 * Table shapes shared by both dialects. Times are epoch milliseconds (integers), booleans are
 * 0/1 integers and JSON is text, so that SQLite and PostgreSQL store the same values.
 */
export interface SitesTable {
  id: Generated<number>
  name: string
  /** HMAC secret for cursors and signed URLs; generated once, never leaves the server. */
  signing_secret: string
  created_at: number
  /** Password rules (Files.com's Site fields of the same names); booleans are 0/1. */
  password_min_length: Generated<number>
  password_require_letter: Generated<number>
  password_require_mixed: Generated<number>
  password_require_number: Generated<number>
  password_require_special: Generated<number>
  max_prior_passwords: Generated<number>
  /** Days a password stays valid; null: forever. */
  password_validity_days: Generated<number | null>
  /** Addresses and CIDRs, one a line, every login must come from; null: any. */
  allowed_ips: Generated<string | null>
  /** 1: two-factor sign-in is required (of everyone, or of site admins: require_2fa_user_type). */
  require_2fa: Generated<number>
  /** `all` or `site_admins`. */
  require_2fa_user_type: Generated<string>
  /** The account's billing contact (the Files.com Site fields); null: not given. */
  contact_name: Generated<string | null>
  phone: Generated<string | null>
  email: Generated<string | null>
}

export interface UsersTable {
  id: Generated<number>
  site_id: number
  username: string
  username_lower: string
  password_hash: string | null
  name: string | null
  email: string | null
  site_admin: number
  self_managed: number
  disabled: number
  created_at: number
  updated_at: number
  last_login_at: number | null
  password_set_at: number | null
  /** 1: the user may create share links (bundles) without being a site admin. */
  attachments_permission: Generated<number>
  /** 1: the user's next sign-in can only change the password. */
  require_password_change: Generated<number>
  /** Days the user's password stays valid (the site's rule may be shorter); null: the site's. */
  password_validity_days: Generated<number | null>
  /** 1: the user may log in through that protocol (their groups may still take it away). */
  ftp_permission: Generated<number>
  sftp_permission: Generated<number>
  dav_permission: Generated<number>
  /** The REST API and the web interface. */
  restapi_permission: Generated<number>
  /** Addresses and CIDRs, one a line, the user's logins must come from; null: any. */
  allowed_ips: Generated<string | null>
  /** When the user's access ends (ms); null: never. */
  authenticate_until: Generated<number | null>
  /** 1: may read and change the site's billing contact (GET/PATCH /site). */
  billing_permission: Generated<number>
  /** 1: reads what a site admin reads, through sessions and keys that change nothing. */
  readonly_site_admin: Generated<number>
  /** `use_system_setting` (the site's rule), `always_require` or `never_require`. */
  require_2fa: Generated<string>
}

/** The hashes of users' earlier passwords, for the site's `max_prior_passwords`. */
export interface PasswordHistoryTable {
  id: Generated<number>
  user_id: number
  password_hash: string
  replaced_at: number
}

export interface PermissionsTable {
  id: Generated<number>
  site_id: number
  /** Exactly one of user_id and group_id is set. */
  user_id: number | null
  group_id: Generated<number | null>
  path: string
  permission: string
  created_at: number
}

export interface GroupsTable {
  id: Generated<number>
  site_id: number
  name: string
  name_lower: string
  notes: string | null
  allowed_ips: string | null
  ftp_permission: number
  sftp_permission: number
  dav_permission: number
  restapi_permission: number
  created_at: number
  updated_at: number
}

export interface GroupUsersTable {
  id: Generated<number>
  site_id: number
  group_id: number
  user_id: number
  admin: number
  created_at: number
}

export interface ApiKeysTable {
  id: Generated<number>
  site_id: number
  user_id: number | null
  key_hash: string
  name: string | null
  description: string | null
  permission_set: string
  path: string | null
  platform: string | null
  expires_at: number | null
  last_use_at: number | null
  created_at: number
  updated_at: number
}

export interface SessionsTable {
  /** sha256 of the session id handed to the client: a stolen database yields no usable sessions. */
  id_hash: string
  site_id: number
  user_id: number
  created_at: number
  last_active_at: number
  ip: string | null
  interface: string
  reauth_failures: number
  reauth_window_start: number
  reauth_window_count: number
  /** 1: the user must enrol a two-factor method; the session can do nothing else until then. */
  two_factor_setup: Generated<number>
}

/** A user's TOTP authenticator (migration 021); the secret is encrypted. */
export interface TwoFactorMethodsTable {
  id: Generated<number>
  site_id: number
  user_id: number
  method_type: string
  name: string
  secret: string
  confirmed_at: number | null
  setup_expires_at: number
  last_counter: number | null
  created_at: number
}

/** One-time recovery codes of a user with two-factor sign-in, as sha256 hashes. */
export interface TwoFactorRecoveryCodesTable {
  id: Generated<number>
  site_id: number
  user_id: number
  code_hash: string
  used_at: number | null
  created_at: number
}

export interface ActionsTable {
  id: Generated<number>
  site_id: number
  created_at: number
  user_id: number | null
  username: string | null
  action: string
  path: string
  folder: string
  source: string | null
  destination: string | null
  display: string
  ip: string | null
  interface: string | null
  failure_type: string | null
  targets: string
}

export interface FilesTable {
  id: Generated<number>
  site_id: number
  path: string
  path_lower: string
  /** lower-case path of the parent folder ('' for the root). */
  parent_lower: string
  name: string
  type: 'file' | 'directory'
  size: number
  /** Key of the bytes in the blob store; null for folders. */
  blob_key: string | null
  md5: string | null
  crc32: string | null
  /** 64 hex characters, computed with md5 and crc32; null before, and for files summed before it was. */
  sha256: Generated<string | null>
  /** JSON object text. */
  custom_metadata: string
  created_at: number
  mtime: number
  provided_mtime: number | null
  created_by_id: number | null
  created_by_api_key_id: number | null
  last_modified_by_id: number | null
  last_modified_by_api_key_id: number | null
}

export interface UploadsTable {
  id: Generated<number>
  site_id: number
  ref: string
  path: string
  user_id: number | null
  api_key_id: number | null
  mkdir_parents: number
  /** 1: at `end`, an existing file keeps its name and the upload is saved as `name (1).ext`… */
  with_rename: Generated<number>
  provided_mtime: number | null
  created_at: number
  expires_at: number
  /** Seconds without activity before it expires; null: the site's UPLOAD_EXPIRY_MINUTES. */
  expiry_seconds: number | null
}

export interface UploadPartsTable {
  upload_id: number
  part_number: number
  size: number
  created_at: number
}

export interface BlobGarbageTable {
  id: Generated<number>
  blob_key: string
  created_at: number
}

export interface WebhookSettingsTable {
  site_id: number
  url: string | null
  /** JSON array of operation names. */
  triggers: string
  enabled: number
  /** 32 hex characters: X-Service-Signature = md5(token + body). */
  verification_token: string
  /** `whsec_…`: the Standard Webhooks HMAC key. */
  signing_secret: string
  created_at: number
  updated_at: number
}

/** `held`: kept, not attempted, while its endpoint is paused or disabled (webhook_endpoints). */
export type NotificationState = 'pending' | 'delivered' | 'failed' | 'dropped' | 'held'

export interface WebhookNotificationsTable {
  id: Generated<number>
  site_id: number
  action_id: number | null
  message_id: string
  operation: string
  user_id: number | null
  username: string
  protocol: string
  path: string
  sourcepath: string
  folder: string
  state: NotificationState
  attempts: Generated<number>
  max_attempts: number
  forced: Generated<number>
  next_attempt_at: number | null
  lease_owner: string | null
  lease_until: number | null
  /** The webhook behavior it is for, or null for the site's listener. */
  behavior_id: number | null
  /** The behavior's URL it goes to (one notification per URL); null for the site's listener. */
  url: string | null
  /** File-aware endpoints: the file and version (its bytes' key and size) the event is about. */
  file_id: Generated<number | null>
  file_blob_key: Generated<string | null>
  file_size: Generated<number | null>
  /** The SHA-256 of that version once known (the checksum job computes it after the upload). */
  file_sha256: Generated<string | null>
  /** Endpoint and path (lower case) it is ordered by; null for tests (sent unordered). */
  order_key: string | null
  /** Its number among its key's notifications (`Webhook-Sequence`); null with no key. */
  sequence: number | null
  /** Its attempts when an enable or a recovery queued it again: the order hold counts from there. */
  order_attempts_from: Generated<number>
  created_at: number
  updated_at: number
}

/** Each ordering key's last sequence number (webhook-ordering.ts). */
export interface WebhookSequencesTable {
  order_key: string
  sequence: number
  updated_at: number
}

export interface WebhookAttemptsTable {
  id: Generated<number>
  site_id: number
  notification_id: number
  attempt: number
  created_at: number
  user_id: number | null
  operation: string
  status: number
  message: string
  success: number
  request_headers: string
  request_method: string
  request_url: string
  request_body: string
  path: string
  folder: string
  response_size: number
  response_body: string
  duration_ms: number
  /** The webhook behavior the request was for, or null for the site's listener. */
  behavior_id: number | null
}

export type EndpointState = 'enabled' | 'failing' | 'disabled' | 'paused'

/** A webhook endpoint: the site's listener or one URL of a webhook behavior (migration 021). */
export interface WebhookEndpointsTable {
  id: Generated<number>
  site_id: number
  /** `site`, or `<behavior id> <url>`: unique within the site. */
  endpoint_key: string
  behavior_id: number | null
  url: string
  state: EndpointState
  consecutive_failures: number
  /** When the current run of failures began (null while it succeeds). */
  failing_since: number | null
  last_success_at: number | null
  last_failure_at: number | null
  last_failure_reason: string | null
  disabled_at: number | null
  disabled_reason: string | null
  /** Requests per second at most (null: no limit). */
  rate_limit: number | null
  /** Requests in flight at once at most, per process (null: no cap). */
  concurrency: number | null
  file_aware: number
  created_at: number
  updated_at: number
}

export type AccountLineItemType = 'invoice' | 'payment'

/** Invoices and payments. Money is integer minor units of `currency` (exact on both dialects). */
export interface AccountLineItemsTable {
  id: Generated<number>
  site_id: number
  type: AccountLineItemType
  currency: string
  amount_minor: number
  /** Invoice: still owed. Payment: not yet applied to an invoice. */
  balance_minor: number
  method: string | null
  payment_type: string | null
  payment_reversed_at: number | null
  created_at: number
  updated_at: number
}

export interface InvoiceLineItemsTable {
  id: Generated<number>
  site_id: number
  invoice_id: number
  amount_minor: number
  description: string
  plan: string | null
  service_start_at: number | null
  service_end_at: number | null
  prepaid_bytes: number | null
  prepaid_bytes_expire_at: number | null
  created_at: number
}

/** One application of a payment to an invoice. */
export interface PaymentLineItemsTable {
  id: Generated<number>
  site_id: number
  payment_id: number
  invoice_id: number
  amount_minor: number
  created_at: number
}

export type ExportKind = 'webhook_log' | 'history'
export type ExportStatus = 'building' | 'ready' | 'failed'

/** An export and the job that builds it (migration 006). */
export interface ExportsTable {
  id: Generated<number>
  site_id: number
  kind: ExportKind
  /** The user it acts for and belongs to; null for a site-wide key. */
  user_id: number | null
  status: ExportStatus
  failure_reason: string | null
  start_at: number | null
  end_at: number | null
  /** JSON object of the query fields as given. */
  query: string
  blob_key: string | null
  result_bytes: number | null
  result_count: number | null
  attempts: Generated<number>
  lease_owner: string | null
  lease_until: number | null
  created_at: number
  updated_at: number
}

export interface Database {
  sites: SitesTable
  users: UsersTable
  permissions: PermissionsTable
  groups: GroupsTable
  group_users: GroupUsersTable
  password_history: PasswordHistoryTable
  api_keys: ApiKeysTable
  sessions: SessionsTable
  actions: ActionsTable
  files: FilesTable
  uploads: UploadsTable
  upload_parts: UploadPartsTable
  blob_garbage: BlobGarbageTable
  webhook_settings: WebhookSettingsTable
  webhook_notifications: WebhookNotificationsTable
  webhook_attempts: WebhookAttemptsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_sequences: WebhookSequencesTable
  account_line_items: AccountLineItemsTable
  invoice_line_items: InvoiceLineItemsTable
  payment_line_items: PaymentLineItemsTable
  exports: ExportsTable
  public_keys: PublicKeysTable
  behaviors: BehaviorsTable
  server_keys: ServerKeysTable
  job_leases: JobLeasesTable
  checksum_jobs: ChecksumJobsTable
  login_failures: LoginFailuresTable
  banned_addresses: BannedAddressesTable
  two_factor_methods: TwoFactorMethodsTable
  two_factor_recovery_codes: TwoFactorRecoveryCodesTable
  mail_outbox: MailOutboxTable
  bundles: BundlesTable
  bundle_paths: BundlePathsTable
  bundle_recipients: BundleRecipientsTable
  bundle_notifications: BundleNotificationsTable
  bundle_registrations: BundleRegistrationsTable
  bundle_downloads: BundleDownloadsTable
  bundle_actions: BundleActionsTable
}

/** Share links: a code, its settings, and (in bundle_paths) the paths it shares. */
export interface BundlesTable {
  id: Generated<number>
  site_id: number
  /** The creator; null for a site-wide key's bundle. */
  user_id: number | null
  api_key_id: number | null
  code: string
  code_lower: string
  password_hash: string | null
  permissions: string
  expires_at: number | null
  start_access_on_date: number | null
  max_uses: number | null
  require_registration: number
  require_share_recipient: number
  skip_name: number
  skip_email: number
  skip_company: number
  description: string | null
  note: string | null
  path_template: string | null
  path_template_time_zone: string | null
  dont_separate_submissions_by_folder: number
  send_email_receipt_to_uploader: number
  dont_allow_folders_in_uploads: number
  created_at: number
  updated_at: number
}

export interface BundlePathsTable {
  id: Generated<number>
  bundle_id: number
  path: string
  recursive: number
}

/** The people a bundle was shared with by e-mail, one row per address (migration 016). */
export interface BundleRecipientsTable {
  id: Generated<number>
  site_id: number
  bundle_id: number
  /** Who added the recipient; null for a site-wide key. */
  user_id: number | null
  recipient: string
  recipient_lower: string
  name: string | null
  company: string | null
  note: string | null
  /** The last time the link was mailed to them; null if it never was. */
  sent_at: number | null
  created_at: number
}

/** Users told by e-mail of registrations on, or uploads to, a bundle (migration 016). */
export interface BundleNotificationsTable {
  id: Generated<number>
  site_id: number
  bundle_id: number
  notify_user_id: number
  notify_on_registration: number
  notify_on_upload: number
  created_at: number
}

/** One visit of a share link: what its visitor gave, and the hash of the code their requests carry. */
export interface BundleRegistrationsTable {
  id: Generated<number>
  site_id: number
  bundle_id: number
  code_hash: string
  code_start: string
  name: string | null
  email: string | null
  company: string | null
  ip: string | null
  created_at: number
}

/** A file (or a ZIP) a visitor downloaded. */
export interface BundleDownloadsTable {
  id: Generated<number>
  site_id: number
  bundle_id: number
  bundle_registration_id: number
  path: string
  /** file or full_zip */
  download_method: string
  created_at: number
}

/** Something a visitor did in a share link (an upload: `create`). */
export interface BundleActionsTable {
  id: Generated<number>
  site_id: number
  bundle_id: number
  bundle_registration_id: number
  path: string
  action: string
  source: string | null
  destination: string | null
  created_at: number
}

/** Failed logins by address, inside the login defender's window. */
export interface LoginFailuresTable {
  id: Generated<number>
  site_id: number
  address: string
  kind: string
  created_at: number
}

/** Addresses the login defender has banned, until `banned_until`. */
export interface BannedAddressesTable {
  id: Generated<number>
  site_id: number
  address: string
  banned_at: number
  banned_until: number
  failures: number
}

/** Blobs whose md5 and CRC-32 are still to be computed (the checksum worker's jobs). */
/** Mail waiting for, or done with, the operator's SMTP server (migration 014). */
export interface MailOutboxTable {
  id: Generated<number>
  site_id: number
  kind: string
  to_address: string
  subject: string
  text_body: string
  html_body: string | null
  message_id: string
  state: Generated<'queued' | 'sent' | 'failed'>
  attempts: Generated<number>
  next_attempt_at: number
  last_error: string | null
  sent_at: number | null
  lease_owner: string | null
  lease_until: number | null
  created_at: number
  /** The user whose action queued it (null: a site-wide key's, or none); counts shared mail. */
  sender_user_id: number | null
}

export interface ChecksumJobsTable {
  id: Generated<number>
  blob_key: string
  attempts: Generated<number>
  lease_owner: string | null
  lease_until: number | null
  created_at: number
}

/** SSH public keys of users, for SFTP logins (the PublicKey resource). */
/** Folder behaviors: settings on a folder path, `value` JSON text (migration 018). */
export interface BehaviorsTable {
  id: Generated<number>
  site_id: number
  path: string
  path_lower: string
  behavior: string
  value: string
  name: string | null
  description: string | null
  /** 0 or 1. */
  recursive: number
  /** 0 or 1. */
  disable_parent_folder_behavior: number
  created_at: number
  updated_at: number
}

export interface PublicKeysTable {
  id: Generated<number>
  site_id: number
  user_id: number
  title: string
  public_key: string
  fingerprint_md5: string
  fingerprint_sha256: string
  created_at: number
  last_login_at: number | null
}

/** The server's own key sets (SFTP host keys, the generated FTP certificate), shared by every node. */
export interface ServerKeysTable {
  name: string
  /** JSON object: file name → file text. */
  value: string
  created_at: number
}

/** Background jobs one process runs at a time: who holds each, until when (epoch ms). */
export interface JobLeasesTable {
  name: string
  lease_owner: string | null
  lease_until: number | null
}
