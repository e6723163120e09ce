import { type TSchema, Type } from '@sinclair/typebox'
import {
  INBOX_RECIPIENT_LIST,
  INBOX_REGISTRATION_LIST,
  INBOX_UPLOAD_LIST,
} from '../../modules/bundles/inbox-model.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Id, listQuery, Nullable } from '../schemas.js'
import { Address, Line, NO_MAIL, Note, recipientFields } from './bundle-mail.js'

const INBOX =
  'An inbox is a write-only share link (permissions write): its id is the link’s. An id naming no such link: 404 not-found/inbox-not-found; another user’s inbox, unless you are a site admin: 403 not-authorized/need-admin-permission-for-inbox'

const hostedOnly = (schema: TSchema) => ({ ...schema, description: 'Not used by Wharf: always null' })

const InboxRecipientSchema = Type.Object(recipientFields, {
  $id: 'InboxRecipient',
  title: 'InboxRecipient',
})

const InboxRegistrationSchema = Type.Object(
  {
    code: Nullable(Type.String({ description: 'Always null: Wharf keeps only a hash of the code' })),
    name: Nullable(Type.String({ description: 'Registrant name' })),
    company: Nullable(Type.String({ description: 'Registrant company name' })),
    email: Nullable(Type.String({ description: 'Registrant email address' })),
    ip: Nullable(Type.String({ description: 'Registrant IP address' })),
    clickwrap_body: hostedOnly(Nullable(Type.String())),
    form_field_set_id: hostedOnly(Nullable(Type.Integer())),
    form_field_data: hostedOnly(Nullable(Type.Object({}, { additionalProperties: true }))),
    inbox_id: Type.Integer({ description: 'The inbox (the share link’s id)' }),
    inbox_recipient_id: hostedOnly(Nullable(Type.Integer())),
    inbox_title: Nullable(Type.String({ description: 'The share link’s description' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'InboxRegistration', title: 'InboxRegistration' },
)

const InboxUploadSchema = Type.Object(
  {
    inbox_registration: InboxRegistrationSchema,
    path: Type.String({ description: 'The file, relative to the share (its folder’s name first)' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'InboxUpload', title: 'InboxUpload' },
)

const InboxRecipientCreateBody = Type.Object(
  {
    inbox_id: Id('The inbox to share'),
    recipient: Address,
    name: Line('Name of the recipient'),
    company: Line('Company of the recipient'),
    note: Note,
    share_after_create: Type.Optional(Type.Boolean({ description: `Mail the link at once. ${NO_MAIL}` })),
  },
  { additionalProperties: false, title: 'InboxRecipientCreate' },
)

const tags = ['inboxes']

/** Inboxes (write-only share links): their recipients, registrations and uploads, for their owners. */
export function inboxRoutes(c: HttpContext): Routes {
  const svc = c.services.inboxes
  return async (app) => {
    app.get(
      '/inbox_recipients',
      {
        config: { access: 'files', xml: ['inbox-recipients', 'inbox-recipient'] },
        schema: {
          summary: 'List the recipients of an inbox',
          description: `filter[has_registrations]: whether someone registered with the recipient’s address. ${INBOX}`,
          tags,
          querystring: listQuery(
            { inbox_id: Id('The inbox whose recipients to list') },
            INBOX_RECIPIENT_LIST,
          ),
          response: { 200: Type.Array(InboxRecipientSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.listRecipients(request.principal, request.query)),
    )

    app.post(
      '/inbox_recipients',
      {
        config: { access: 'files', xml: 'inbox-recipient' },
        schema: {
          summary: 'Add a recipient to an inbox, and mail them its link',
          description: `As POST /bundle_recipients: an address already among the recipients is 422 processing-failure/recipient-already-shared; beyond SHARE_MAIL_LIMIT_PER_HOUR, 429 rate-limited/too-many-shares. ${INBOX}`,
          tags,
          body: InboxRecipientCreateBody,
          response: { 201: InboxRecipientSchema, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await svc.createRecipient(request.principal, request.body)),
    )

    app.get(
      '/inbox_registrations',
      {
        config: { access: 'files', xml: ['inbox-registrations', 'inbox-registration'] },
        schema: {
          summary: 'List the visits of an inbox (codes are not shown)',
          description: `Without folder_behavior_id (site admins only; others: 400 bad-request/request-params-required), every inbox’s. ${INBOX}`,
          tags,
          querystring: listQuery(
            { folder_behavior_id: Type.Optional(Id('The inbox (the share link’s id)')) },
            INBOX_REGISTRATION_LIST,
          ),
          response: { 200: Type.Array(InboxRegistrationSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.registrations(request.principal, request.query)),
    )

    app.get(
      '/inbox_uploads',
      {
        config: { access: 'files', xml: ['inbox-uploads', 'inbox-upload'] },
        schema: {
          summary: 'List the files uploaded to your inboxes (site admins: every inbox’s)',
          description: `filter[folder_behavior_id] names an inbox, checked as inbox_id is elsewhere. ${INBOX}`,
          tags,
          querystring: listQuery({}, INBOX_UPLOAD_LIST),
          response: { 200: Type.Array(InboxUploadSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.uploads(request.principal, request.query)),
    )
  }
}
