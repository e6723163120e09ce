import type { Kysely } from 'kysely'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { isUniqueViolation } from '../../db/errors.js'
import type { Database } from '../../db/schema.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import { queueMail, wakeMailWorkers } from '../../mail/mail-queue.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'
import type {
  BundleMailRepository,
  BundleNotificationRow,
  BundleRecipientRow,
} from './bundle-mail-repository.js'
import { notificationMail, shareMail } from './bundle-mail-text.js'
import type { BundleWithOwner } from './bundle-repository.js'
import { type BundleService, refuseAppKeys } from './bundle-service.js'

export interface BundleRecipientJson {
  company: string | null
  name: string | null
  note: string | null
  recipient: string
  sent_at: string | null
}

export interface BundleNotificationJson {
  bundle_id: number
  id: number
  notify_on_registration: boolean
  notify_on_upload: boolean
  notify_user_id: number
}

export interface RecipientInput {
  recipient?: string | undefined
  /** Another spelling of `recipient`. */
  email?: string | undefined
  name?: string | null | undefined
  company?: string | null | undefined
  note?: string | null | undefined
  /** In a share: false records the recipient without mailing them (default true). */
  share_after_create?: boolean | undefined
}

export interface ShareInput {
  to?: string[] | undefined
  note?: string | null | undefined
  recipients?: RecipientInput[] | undefined
}

export const RECIPIENT_LIST: ListSpec = { name: 'bundle_recipients', idColumn: 'id', sort: {}, filter: {} }

export const NOTIFICATION_LIST: ListSpec = {
  name: 'bundle_notifications',
  idColumn: 'bundle_notifications.id',
  sort: { bundle_id: { column: 'bundle_notifications.bundle_id', type: 'integer' } },
  filter: { bundle_id: { column: 'bundle_notifications.bundle_id', type: 'integer' } },
}

const HOUR = 3_600_000

// One address, without display name or anything a header could be bent with; 254 is SMTP's limit.
const ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/
/** The address rule as the Swagger document states it (checked here: 422 on the field). */
export const ADDRESS_PATTERN = ADDRESS.source

/** What the mail of share links needs from the settings. */
export type MailSettings = Pick<ModuleSettings, 'mail' | 'siteName'> & { baseUrl: string }

const bundleUrl = (baseUrl: string, code: string) => `${baseUrl}/f/${encodeURIComponent(code)}`

/**
 * Queues, in the caller's transaction, the message telling each user notified of this event on
 * the bundle (BundleNotification) that it happened; users without an e-mail address, or disabled,
 * are skipped, and nothing is queued when mail is not configured. The visitor side calls it in the
 * transaction that records the registration or the upload, then `wakeMailWorkers()` after the
 * commit. Returns the queued messages' ids.
 */
export async function queueBundleNotifications(
  trx: Kysely<Database>,
  repo: BundleMailRepository,
  settings: MailSettings,
  input: {
    bundle: { id: number; site_id: number; code: string; description: string | null }
    event: 'registration' | 'upload'
    visitor: { name?: string | null; email?: string | null; company?: string | null; ip?: string | null }
    /** The paths uploaded (for an upload). */
    paths?: string[]
    now: number
  },
): Promise<number[]> {
  if (!settings.mail.enabled) return []
  const users = await repo.on(trx).notified(input.bundle.id, input.event)
  if (users.length === 0) return []
  const kind = input.event === 'registration' ? 'bundle_registration' : 'bundle_upload'
  const mail = notificationMail({
    event: input.event,
    code: input.bundle.code,
    description: input.bundle.description,
    url: bundleUrl(settings.baseUrl, input.bundle.code),
    visitor: input.visitor,
    paths: input.paths,
    site: settings.siteName,
  })
  return queueMail(
    trx,
    users.map((u) => ({ siteId: input.bundle.site_id, kind, to: u.email, ...mail })),
    input.now,
    settings.mail.domain,
  )
}

/**
 * Sharing a link by e-mail (`POST /bundles/{id}/share`, BundleRecipient) and the users told of its
 * use (BundleNotification). Each reaches only the bundles its caller sees (bundle-service.ts).
 */
export class BundleMailService {
  constructor(
    private readonly repo: BundleMailRepository,
    private readonly bundles: BundleService,
    private readonly users: UserRepository,
    private readonly secrets: SiteSecrets,
    private readonly settings: () => MailSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** For the visitor side: see queueBundleNotifications. */
  queueNotifications(
    trx: Kysely<Database>,
    input: Omit<Parameters<typeof queueBundleNotifications>[3], 'now'>,
  ): Promise<number[]> {
    return queueBundleNotifications(trx, this.repo, this.settings(), { ...input, now: this.now() })
  }

  /** POST /bundles/{id}/share: mails the link to every address, recording each as a recipient. */
  async share(p: Principal, id: number, input: ShareInput): Promise<void> {
    const bundle = await this.sharedBundle(p, id)
    const errors: ModelErrors = {}
    const wanted = new Map<string, RecipientInput & { recipient: string; send: boolean }>()
    for (const to of input.to ?? []) {
      const recipient = checkAddress(to, 'to', errors)
      wanted.set(recipient.toLowerCase(), { recipient, note: input.note, send: true })
    }
    for (const r of input.recipients ?? []) {
      const recipient = checkAddress(r.recipient ?? r.email ?? '', 'recipients', errors)
      wanted.set(recipient.toLowerCase(), {
        ...r,
        recipient,
        note: r.note ?? input.note,
        send: r.share_after_create !== false,
      })
    }
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    if (wanted.size === 0) throw ERRORS.requestParamsRequired('to or recipients is required')
    const settings = this.mailOn()
    const sender = senderName(p, settings)
    const now = this.now()
    await this.repo.transaction(async (tx) => {
      const sending = [...wanted.values()].filter((w) => w.send).length
      await this.checkLimit(tx, p, sending, now)
      const existing = new Map(
        (await tx.recipientsAt(bundle.id, [...wanted.keys()])).map((r) => [r.recipient_lower, r]),
      )
      const mails = []
      for (const [lower, w] of wanted) {
        const note = w.note ?? null
        const row = existing.get(lower)
        const sentAt = w.send ? now : (row?.sent_at ?? null)
        if (row) {
          await tx.updateRecipient(row.id, {
            ...(w.name !== undefined ? { name: w.name || null } : {}),
            ...(w.company !== undefined ? { company: w.company || null } : {}),
            note,
            sent_at: sentAt,
          })
        } else {
          await tx.insertRecipient({
            site_id: p.siteId,
            bundle_id: bundle.id,
            user_id: p.user?.id ?? null,
            recipient: w.recipient,
            recipient_lower: lower,
            name: w.name || null,
            company: w.company || null,
            note,
            sent_at: sentAt,
            created_at: now,
          })
        }
        if (w.send) mails.push(this.shareMessage(p, bundle, w.recipient, note, sender, settings))
      }
      await queueMail(tx.db, mails, now, settings.mail.domain)
    })
    wakeMailWorkers()
  }

  /** GET /bundle_recipients?bundle_id= */
  async listRecipients(p: Principal, query: Record<string, unknown>): Promise<Page<BundleRecipientJson>> {
    const bundleId = query['bundle_id'] as number
    const bundle = await this.bundles.visible(p, bundleId)
    const list = await readListRequest(this.secrets, p.siteId, RECIPIENT_LIST, query, {
      bundle_id: bundle.id,
    })
    return mapPage(await this.repo.recipientPage(bundle.id, list), renderRecipient)
  }

  /**
   * POST /bundle_recipients: one recipient, mailed at once with `share_after_create`. An address
   * already among the bundle's recipients is refused (422 `recipient-already-shared`): sharing
   * again goes through `POST /bundles/{id}/share`, which mails it anew.
   */
  async createRecipient(
    p: Principal,
    input: RecipientInput & { bundle_id: number },
  ): Promise<BundleRecipientJson> {
    const bundle = await this.sharedBundle(p, input.bundle_id)
    const errors: ModelErrors = {}
    const recipient = checkAddress(input.recipient ?? '', 'recipient', errors)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const send = input.share_after_create === true
    const settings = send ? this.mailOn() : this.settings()
    const now = this.now()
    const lower = recipient.toLowerCase()
    const already = () =>
      ERRORS.recipientAlreadyShared(`${recipient} is already a recipient of share link ${bundle.id}`)
    try {
      const row = await this.repo.transaction(async (tx) => {
        if ((await tx.recipientsAt(bundle.id, [lower])).length > 0) throw already()
        if (send) await this.checkLimit(tx, p, 1, now)
        const note = input.note || null
        const inserted = await tx.insertRecipient({
          site_id: p.siteId,
          bundle_id: bundle.id,
          user_id: p.user?.id ?? null,
          recipient,
          recipient_lower: lower,
          name: input.name || null,
          company: input.company || null,
          note,
          sent_at: send ? now : null,
          created_at: now,
        })
        if (send) {
          const mail = this.shareMessage(p, bundle, recipient, note, senderName(p, settings), settings)
          await queueMail(tx.db, [mail], now, settings.mail.domain)
        }
        return inserted
      })
      if (send) wakeMailWorkers()
      return renderRecipient(row)
    } catch (err) {
      if (isUniqueViolation(err)) throw already()
      throw err
    }
  }

  /** GET /bundle_notifications: on the bundles the caller sees (`user_id`: that user's bundles). */
  async listNotifications(
    p: Principal,
    query: Record<string, unknown>,
  ): Promise<Page<BundleNotificationJson>> {
    const n = query['user_id'] as number | undefined
    let owner: number | undefined
    if (n === undefined) owner = isSiteAdmin(p) ? undefined : p.user!.id
    else if (n === 0) owner = p.user?.id
    else if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can name another user_id')
    } else owner = n
    const list = await readListRequest(this.secrets, p.siteId, NOTIFICATION_LIST, query, {
      user_id: owner ?? 'all',
    })
    return mapPage(await this.repo.notificationPage(p.siteId, owner, list), renderNotification)
  }

  async getNotification(p: Principal, id: number): Promise<BundleNotificationJson> {
    return renderNotification(await this.visibleNotification(p, id))
  }

  /** POST /bundle_notifications: `notify_user_id` is the caller unless a site admin names another user. */
  async createNotification(
    p: Principal,
    input: {
      bundle_id: number
      notify_user_id?: number | undefined
      notify_on_registration?: boolean | undefined
      notify_on_upload?: boolean | undefined
    },
  ): Promise<BundleNotificationJson> {
    refuseAppKeys(p)
    const bundle = await this.bundles.visible(p, input.bundle_id)
    const notifyUserId = await this.notifiedUser(p, input.notify_user_id)
    const now = this.now()
    const id = await this.repo.insertNotification({
      site_id: p.siteId,
      bundle_id: bundle.id,
      notify_user_id: notifyUserId,
      notify_on_registration: input.notify_on_registration ? 1 : 0,
      notify_on_upload: input.notify_on_upload ? 1 : 0,
      created_at: now,
    })
    return renderNotification((await this.repo.findNotification(p.siteId, id))!)
  }

  async updateNotification(
    p: Principal,
    id: number,
    input: { notify_on_registration?: boolean | undefined; notify_on_upload?: boolean | undefined },
  ): Promise<BundleNotificationJson> {
    refuseAppKeys(p)
    const row = await this.visibleNotification(p, id)
    const patch: { notify_on_registration?: number; notify_on_upload?: number } = {}
    if (input.notify_on_registration !== undefined)
      patch.notify_on_registration = input.notify_on_registration ? 1 : 0
    if (input.notify_on_upload !== undefined) patch.notify_on_upload = input.notify_on_upload ? 1 : 0
    if (Object.keys(patch).length) await this.repo.updateNotification(row.id, patch)
    return renderNotification((await this.repo.findNotification(p.siteId, row.id))!)
  }

  async removeNotification(p: Principal, id: number): Promise<void> {
    refuseAppKeys(p)
    await this.repo.deleteNotification((await this.visibleNotification(p, id)).id)
  }

  // ---------- internals ----------

  /** The bundle, if the caller sees it and may change it (as for PATCH /bundles/{id}). */
  private async sharedBundle(p: Principal, id: number): Promise<BundleWithOwner> {
    refuseAppKeys(p)
    const bundle = await this.bundles.visible(p, id)
    if (!isSiteAdmin(p) && p.user?.attachments_permission !== 1) {
      throw ERRORS.notAllowedToCreateBundle('You are not allowed to share links: ask a site administrator')
    }
    return bundle
  }

  private mailOn(): MailSettings {
    const settings = this.settings()
    if (!settings.mail.enabled) {
      throw ERRORS.mailNotConfigured(
        'This server sends no e-mail: its operator has not set SMTP_URL, so share links cannot be sent by e-mail',
      )
    }
    return settings
  }

  /** At most SHARE_MAIL_LIMIT_PER_HOUR share messages per sender in the last hour, these included. */
  private async checkLimit(
    tx: BundleMailRepository,
    p: Principal,
    adding: number,
    now: number,
  ): Promise<void> {
    if (adding === 0) return
    const limit = this.settings().mail.shareLimitPerHour
    const sent = await tx.sharesSince(p.siteId, p.user?.id ?? null, now - HOUR)
    if (sent + adding > limit) {
      throw ERRORS.tooManyShares(
        `Share links may be mailed to at most ${limit} recipients an hour; ${Math.max(0, limit - sent)} more can be sent now`,
      )
    }
  }

  private shareMessage(
    p: Principal,
    bundle: BundleWithOwner,
    to: string,
    note: string | null,
    sender: string,
    settings: MailSettings,
  ) {
    return {
      siteId: p.siteId,
      kind: 'bundle_share',
      to,
      senderUserId: p.user?.id ?? null,
      ...shareMail({
        sender,
        note,
        url: bundleUrl(settings.baseUrl, bundle.code),
        site: settings.siteName,
        asksForFiles: bundle.permissions === 'write',
      }),
    }
  }

  private async visibleNotification(p: Principal, id: number): Promise<BundleNotificationRow> {
    const row = await this.repo.findNotification(p.siteId, id)
    const notFound = () => ERRORS.notFound(`Bundle notification ${id} not found`)
    if (!row) throw notFound()
    try {
      await this.bundles.visible(p, row.bundle_id)
    } catch {
      throw notFound()
    }
    return row
  }

  private async notifiedUser(p: Principal, n: number | undefined): Promise<number> {
    if ((n === undefined || n === 0) && p.user) return p.user.id
    if (n === undefined || n === 0) {
      throw ERRORS.requestParamsRequired('notify_user_id is required with a site-wide key')
    }
    if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can notify another user')
    }
    const user = await this.users.find(p.siteId, n)
    if (!user) throw ERRORS.userNotFound(`User ${n} not found`)
    return user.id
  }
}

function checkAddress(raw: string, field: string, errors: ModelErrors): string {
  const address = raw.trim()
  if (address.length > 254 || !ADDRESS.test(address)) {
    addModelError(errors, field, `"${raw}" is not an e-mail address`)
  }
  return address
}

/** Who the message says shares the link: the user's name or username, or the site for a site-wide key. */
function senderName(p: Principal, settings: MailSettings): string {
  return p.user?.name?.trim() || p.user?.username || settings.siteName
}

function renderRecipient(r: BundleRecipientRow): BundleRecipientJson {
  return {
    company: r.company,
    name: r.name,
    note: r.note,
    recipient: r.recipient,
    sent_at: formatDateTime(r.sent_at),
  }
}

function renderNotification(r: BundleNotificationRow): BundleNotificationJson {
  return {
    bundle_id: Number(r.bundle_id),
    id: Number(r.id),
    notify_on_registration: r.notify_on_registration === 1,
    notify_on_upload: r.notify_on_upload === 1,
    notify_user_id: Number(r.notify_user_id),
  }
}
