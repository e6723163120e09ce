import { formatDateTime } from '../../api/datetime.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { BundleRecipientJson } from './bundle-mail-service.js'
import type { BundleRow } from './bundle-repository.js'
import type { BundleActionRow, RegistrationWithCode } from './bundle-visit-repository.js'

/**
 * Inboxes as the SDK's InboxRecipient, InboxRegistration and InboxUpload show them. An inbox is a
 * write-only share link (`permissions: 'write'`): its id is the link's id, its registrations the
 * link's visits, its uploads the link's recorded uploads.
 */

/** The permissions that make a share link an inbox: visitors upload and see nothing. */
export const INBOX_PERMISSIONS = 'write'

export const isInbox = (bundle: Pick<BundleRow, 'permissions'>) => bundle.permissions === INBOX_PERMISSIONS

export type InboxRecipientJson = BundleRecipientJson

export interface InboxRegistrationJson {
  code: string | null
  name: string | null
  company: string | null
  email: string | null
  ip: string | null
  clickwrap_body: null
  form_field_set_id: null
  form_field_data: null
  inbox_id: number
  inbox_recipient_id: null
  inbox_title: string | null
  created_at: string
}

export interface InboxUploadJson {
  inbox_registration: InboxRegistrationJson
  path: string
  created_at: string
}

/** A registration with its link's code and description (the inbox's title). */
export type InboxRegistrationRow = RegistrationWithCode & { bundle_description: string | null }
export type InboxUploadRow = BundleActionRow & { registration: InboxRegistrationRow }

/** Owners' lists never show the code: Wharf keeps only its hash. */
export function renderInboxRegistration(r: InboxRegistrationRow): InboxRegistrationJson {
  return {
    code: null,
    name: r.name,
    company: r.company,
    email: r.email,
    ip: r.ip,
    clickwrap_body: null,
    form_field_set_id: null,
    form_field_data: null,
    inbox_id: Number(r.bundle_id),
    inbox_recipient_id: null,
    inbox_title: r.bundle_description,
    created_at: formatDateTime(r.created_at)!,
  }
}

export function renderInboxUpload(r: InboxUploadRow): InboxUploadJson {
  return {
    inbox_registration: renderInboxRegistration(r.registration),
    path: r.path,
    created_at: formatDateTime(r.created_at)!,
  }
}

/**
 * `has_registrations`: whether someone registered on the inbox with the recipient's address
 * (case-insensitively); the repository computes the column in a derived table `r`.
 */
export const INBOX_RECIPIENT_LIST: ListSpec = {
  name: 'inbox_recipients',
  idColumn: 'r.id',
  sort: {},
  filter: { has_registrations: { column: 'r.has_registrations', type: 'boolean' } },
}

export const INBOX_REGISTRATION_LIST: ListSpec = {
  name: 'inbox_registrations',
  idColumn: 'bundle_registrations.id',
  sort: {},
  filter: {},
}

export const INBOX_UPLOAD_LIST: ListSpec = {
  name: 'inbox_uploads',
  idColumn: 'bundle_actions.id',
  sort: { created_at: { column: 'bundle_actions.created_at', type: 'datetime' } },
  filter: {
    created_at: { column: 'bundle_actions.created_at', type: 'datetime' },
    folder_behavior_id: { column: 'bundle_actions.bundle_id', type: 'integer' },
    inbox_registration_id: { column: 'bundle_actions.bundle_registration_id', type: 'integer' },
  },
}
