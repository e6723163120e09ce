import { Type } from '@sinclair/typebox'
import {
  ADDRESS_PATTERN,
  NOTIFICATION_LIST,
  RECIPIENT_LIST,
} from '../../modules/bundles/bundle-mail-service.js'
import { deleteById } from '../delete-by-id.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import {
  DateTime,
  EchoId,
  errorResponses,
  FreeText,
  Id,
  IdParams,
  listQuery,
  Nullable,
  UserIdParam,
} from '../schemas.js'

export const NO_MAIL = 'Without SMTP_URL the server sends no mail: 422 processing-failure/mail-not-configured'

/** The fields of a recipient, as BundleRecipient and InboxRecipient show them. */
export const recipientFields = {
  company: Nullable(Type.String({ description: "The recipient's company" })),
  name: Nullable(Type.String({ description: "The recipient's name" })),
  note: Nullable(Type.String({ description: 'The note sent with the link' })),
  recipient: Type.String({ description: "The recipient's e-mail address" }),
  sent_at: DateTime('When the link was last mailed to them; null if never'),
}

export const BundleRecipientSchema = Type.Object(recipientFields, {
  $id: 'BundleRecipient',
  title: 'BundleRecipient',
})

export const BundleNotificationSchema = Type.Object(
  {
    bundle_id: Type.Integer(),
    id: Type.Integer(),
    notify_on_registration: Type.Boolean({ description: 'Mail the user when someone registers on the link' }),
    notify_on_upload: Type.Boolean({ description: 'Mail the user when someone uploads through the link' }),
    notify_user_id: Type.Integer({ description: 'The user told' }),
  },
  { $id: 'BundleNotification', title: 'BundleNotification' },
)

export const Address = Type.String({
  maxLength: 254,
  pattern: ADDRESS_PATTERN,
  description: 'An e-mail address, without a display name',
  ...checked('email'),
})
export const Note = Type.Optional(Nullable(FreeText(4096, 'lines', 'Note included in the message')))
export const Line = (description: string) => Type.Optional(Nullable(FreeText(255, 'line', description)))
const Ignored = Type.Optional(Type.Unknown({ description: 'Accepted and ignored by Wharf' }))

const ShareBody = Type.Object(
  {
    id: EchoId,
    to: Type.Optional(Type.Array(Address, { maxItems: 1000, description: 'Addresses to mail the link to' })),
    note: Note,
    recipients: Type.Optional(
      Type.Array(
        Type.Object(
          {
            recipient: Type.Optional(Address),
            email: Type.Optional({ ...Address, description: 'Another name for recipient' }),
            name: Line('Name of the recipient'),
            company: Line('Company of the recipient'),
            note: Note,
            share_after_create: Type.Optional(
              Type.Boolean({ description: 'false: record the recipient without mailing them' }),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 1000, description: 'Recipients to mail the link to' },
      ),
    ),
  },
  { additionalProperties: false, title: 'BundleShare' },
)

const RecipientListQuery = listQuery(
  { user_id: Type.Optional(UserIdParam), bundle_id: Id('The share link whose recipients to list') },
  RECIPIENT_LIST,
)

const RecipientCreateBody = Type.Object(
  {
    user_id: Type.Optional(UserIdParam),
    bundle_id: Id('The share link'),
    recipient: Address,
    name: Line('Name of the recipient'),
    company: Line('Company of the recipient'),
    note: Note,
    share_after_create: Type.Optional(Type.Boolean({ description: `Mail the link at once. ${NO_MAIL}` })),
  },
  { additionalProperties: false, title: 'BundleRecipientCreate' },
)

const NotificationListQuery = listQuery({ user_id: Type.Optional(UserIdParam) }, NOTIFICATION_LIST)

const Flag = (description: string) => Type.Optional(Type.Boolean({ description }))
const NotificationCreateBody = Type.Object(
  {
    user_id: Type.Optional(UserIdParam),
    bundle_id: Id('The share link'),
    notify_user_id: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'The user to tell (default: the caller)',
      }),
    ),
    notify_on_registration: Flag('Mail the user when someone registers (default false)'),
    notify_on_upload: Flag('Mail the user when someone uploads (default false)'),
  },
  { additionalProperties: false, title: 'BundleNotificationCreate' },
)
const NotificationUpdateBody = Type.Object(
  {
    id: EchoId,
    notify_on_registration: Flag('Mail the user when someone registers'),
    notify_on_upload: Flag('Mail the user when someone uploads'),
    bundle_id: Ignored,
    notify_user_id: Ignored,
    user_id: Ignored,
  },
  { additionalProperties: false, title: 'BundleNotificationUpdate' },
)

const tags = ['bundles']

/** Share links sent by e-mail, their recipients, and the users told of their use. */
export function bundleMailRoutes(c: HttpContext): Routes {
  const svc = c.services.bundleMail
  return async (app) => {
    app.post(
      '/bundles/:id/share',
      {
        config: { access: 'files' },
        schema: {
          summary: 'Mail a share link to people',
          description: `to, recipients or both (at least one address; else 400 bad-request/request-params-required). One message per address; each becomes a BundleRecipient. ${NO_MAIL}; beyond SHARE_MAIL_LIMIT_PER_HOUR recipients an hour, 429 rate-limited/too-many-shares`,
          tags,
          params: IdParams,
          body: ShareBody,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        const { id: _id, ...input } = request.body
        await svc.share(request.principal, request.params.id, input)
        return reply.code(204).send()
      },
    )

    app.get(
      '/bundle_recipients',
      {
        config: { access: 'files', xml: ['bundle_recipients', 'bundle_recipient'] },
        schema: {
          summary: 'List the recipients of a share link',
          tags,
          querystring: RecipientListQuery,
          response: { 200: Type.Array(BundleRecipientSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.listRecipients(request.principal, request.query)),
    )

    app.post(
      '/bundle_recipients',
      {
        config: { access: 'files', xml: 'bundle_recipient' },
        schema: {
          summary: 'Add a recipient to a share link',
          description:
            'An address already among the link’s recipients: 422 processing-failure/recipient-already-shared',
          tags,
          body: RecipientCreateBody,
          response: { 201: BundleRecipientSchema, ...errorResponses },
        },
      },
      async (request, reply) => {
        const { user_id: _u, ...input } = request.body
        return reply.code(201).send(await svc.createRecipient(request.principal, input))
      },
    )

    app.get(
      '/bundle_notifications',
      {
        config: { access: 'files', xml: ['bundle_notifications', 'bundle_notification'] },
        schema: {
          summary:
            'List the notifications of share links (site admins: every link’s; others: their own links’)',
          tags,
          querystring: NotificationListQuery,
          response: { 200: Type.Array(BundleNotificationSchema), ...errorResponses },
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.listNotifications(request.principal, request.query)),
    )

    app.get(
      '/bundle_notifications/:id',
      {
        config: { access: 'files', xml: 'bundle_notification' },
        schema: {
          summary: 'Show a notification of a share link',
          tags,
          params: IdParams,
          response: { 200: BundleNotificationSchema, ...errorResponses },
        },
      },
      async (request) => svc.getNotification(request.principal, request.params.id),
    )

    app.post(
      '/bundle_notifications',
      {
        config: { access: 'files', xml: 'bundle_notification' },
        schema: {
          summary: 'Tell a user by e-mail of registrations on, or uploads to, a share link',
          tags,
          body: NotificationCreateBody,
          response: { 201: BundleNotificationSchema, ...errorResponses },
        },
      },
      async (request, reply) => {
        const { user_id: _u, ...input } = request.body
        return reply.code(201).send(await svc.createNotification(request.principal, input))
      },
    )

    app.patch(
      '/bundle_notifications/:id',
      {
        config: { access: 'files', xml: 'bundle_notification' },
        schema: {
          summary: 'Change what a notification of a share link tells',
          tags,
          params: IdParams,
          body: NotificationUpdateBody,
          response: { 200: BundleNotificationSchema, ...errorResponses },
        },
      },
      async (request) => {
        const { notify_on_registration, notify_on_upload } = request.body
        return svc.updateNotification(request.principal, request.params.id, {
          notify_on_registration,
          notify_on_upload,
        })
      },
    )

    deleteById(
      app,
      '/bundle_notifications/:id',
      { summary: 'Delete a notification of a share link', tags },
      (p, id) => svc.removeNotification(p, id),
      'files',
    )
  }
}
