import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import type { BundleMailService, RecipientInput } from './bundle-mail-service.js'
import type { BundleRepository, BundleWithOwner } from './bundle-repository.js'
import {
  INBOX_RECIPIENT_LIST,
  INBOX_REGISTRATION_LIST,
  INBOX_UPLOAD_LIST,
  type InboxRecipientJson,
  type InboxRegistrationJson,
  type InboxUploadJson,
  isInbox,
  renderInboxRegistration,
  renderInboxUpload,
} from './inbox-model.js'
import type { InboxRepository } from './inbox-repository.js'

/**
 * Inboxes, their owners' side: the SDK's InboxRecipient, InboxRegistration and InboxUpload over
 * write-only share links. The link's creator and site admins see an inbox; anyone else is refused
 * with 403 `need-admin-permission-for-inbox`, and an id that names no write-only link with 404
 * `inbox-not-found`.
 */
export class InboxService {
  constructor(
    private readonly repo: InboxRepository,
    private readonly bundles: BundleRepository,
    private readonly mail: BundleMailService,
    private readonly secrets: SiteSecrets,
  ) {}

  /** The inbox (a write-only share link) if the caller may manage it. */
  async inbox(p: Principal, id: number): Promise<BundleWithOwner> {
    const row = await this.bundles.find(p.siteId, id)
    if (!row || !isInbox(row)) throw ERRORS.inboxNotFound(`Inbox ${id} not found`)
    if (!isSiteAdmin(p) && row.user_id !== p.user?.id) {
      throw ERRORS.needAdminPermissionForInbox(
        `Inbox ${id} belongs to another user: only they and site administrators can see it`,
      )
    }
    return row
  }

  /** GET /inbox_recipients?inbox_id= */
  async listRecipients(p: Principal, query: Record<string, unknown>): Promise<Page<InboxRecipientJson>> {
    const inbox = await this.inbox(p, query['inbox_id'] as number)
    const list = await readListRequest(this.secrets, p.siteId, INBOX_RECIPIENT_LIST, query, {
      inbox_id: inbox.id,
    })
    return mapPage(await this.repo.recipientPage(inbox.id, list), (r) => ({
      company: r.company,
      name: r.name,
      note: r.note,
      recipient: r.recipient,
      sent_at: formatDateTime(r.sent_at),
    }))
  }

  /**
   * POST /inbox_recipients: a recipient of the inbox's link, mailed at once with
   * `share_after_create` (the share-link recipients' path: its rules, limit and errors).
   */
  async createRecipient(
    p: Principal,
    input: RecipientInput & { inbox_id: number },
  ): Promise<InboxRecipientJson> {
    const { inbox_id, ...rest } = input
    const inbox = await this.inbox(p, inbox_id)
    return this.mail.createRecipient(p, { ...rest, bundle_id: inbox.id })
  }

  /** GET /inbox_registrations: `folder_behavior_id` (the inbox) is required but for site admins. */
  async registrations(p: Principal, query: Record<string, unknown>): Promise<Page<InboxRegistrationJson>> {
    const id = query['folder_behavior_id'] as number | undefined
    if (id === undefined && !isSiteAdmin(p)) {
      throw ERRORS.requestParamsRequired(
        'folder_behavior_id (the inbox) is required unless you are a site administrator',
      )
    }
    const inboxId = id === undefined ? undefined : (await this.inbox(p, id)).id
    const list = await readListRequest(this.secrets, p.siteId, INBOX_REGISTRATION_LIST, query, {
      folder_behavior_id: inboxId ?? 'all',
    })
    const page = await this.repo.registrationPage({ siteId: p.siteId, userId: undefined, inboxId }, list)
    return mapPage(page, renderInboxRegistration)
  }

  /**
   * GET /inbox_uploads: the uploads of the caller's inboxes (site admins: every inbox's).
   * `filter[folder_behavior_id]` names an inbox, checked as `inbox_id` is elsewhere.
   */
  async uploads(p: Principal, query: Record<string, unknown>): Promise<Page<InboxUploadJson>> {
    const userId = isSiteAdmin(p) ? undefined : p.user!.id
    const list = await readListRequest(this.secrets, p.siteId, INBOX_UPLOAD_LIST, query, {
      user_id: userId ?? 'all',
    })
    let inboxId: number | undefined
    for (const f of list.query.filters) {
      if (f.field === 'folder_behavior_id' && f.op === 'filter') {
        inboxId = (await this.inbox(p, Number(f.value))).id
      }
    }
    const page = await this.repo.uploadPage({ siteId: p.siteId, userId, inboxId }, list)
    return mapPage(page, renderInboxUpload)
  }
}
