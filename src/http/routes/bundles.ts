import { type TSchema, Type } from '@sinclair/typebox'
import { BUNDLE_LIST, BUNDLE_PERMISSIONS } from '../../modules/bundles/bundle-model.js'
import { deleteById } from '../delete-by-id.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import {
  DateTime,
  DateTimeText,
  EchoId,
  errorResponses,
  FreeText,
  IdParams,
  listQuery,
  Nullable,
  PathText,
  UserIdParam,
} from '../schemas.js'

const IGNORED = 'Accepted and ignored by Wharf'
const hostedOnly = (schema: TSchema) => ({ ...schema, description: `${IGNORED}: always as shown here` })
const NullString = hostedOnly(Nullable(Type.String()))
const NullInteger = hostedOnly(Nullable(Type.Integer()))

const BundlePathSchema = Type.Object(
  {
    recursive: Type.Boolean({ description: 'Subfolders are shared too (always true in Wharf)' }),
    path: Type.String({ description: 'A shared file or folder, without slashes around it' }),
  },
  { title: 'BundlePath' },
)

export const BundleSchema = Type.Object(
  {
    code: Type.String({ description: 'The end of the public URL' }),
    color_left: NullString,
    color_link: NullString,
    color_text: NullString,
    color_top: NullString,
    color_top_text: NullString,
    url: Type.String({ description: 'Public URL of the share link: {BASE_URL}/f/{code}' }),
    description: Nullable(Type.String({ description: 'Public description' })),
    expires_at: DateTime('When the share link stops working; null for never'),
    password_protected: Type.Boolean(),
    permissions: Type.String({ description: `One of ${BUNDLE_PERMISSIONS.join(', ')}` }),
    preview_only: Type.Boolean({ description: 'true when permissions is preview_only' }),
    require_registration: Type.Boolean(),
    require_share_recipient: Type.Boolean(),
    require_logout: hostedOnly(Type.Boolean()),
    clickwrap_body: NullString,
    form_field_set: hostedOnly(Nullable(Type.Object({}, { additionalProperties: true }))),
    skip_name: Type.Boolean(),
    skip_email: Type.Boolean(),
    start_access_on_date: DateTime('When the share link starts working; null for at once'),
    skip_company: Type.Boolean(),
    id: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    dont_separate_submissions_by_folder: Type.Boolean(),
    max_uses: Nullable(
      Type.Integer({ description: 'How many times the link may be used; null for no limit' }),
    ),
    note: Nullable(Type.String({ description: 'Internal note, not shown to recipients' })),
    path_template: Nullable(Type.String()),
    path_template_time_zone: Nullable(Type.String()),
    send_email_receipt_to_uploader: Type.Boolean(),
    snapshot_id: NullInteger,
    user_id: Nullable(Type.Integer({ description: 'The creator; null for a site-wide key’s bundle' })),
    username: Nullable(Type.String()),
    clickwrap_id: NullInteger,
    inbox_id: NullInteger,
    watermark_attachment: hostedOnly(
      Nullable(Type.Object({ name: Type.String(), uri: Type.String() }, { additionalProperties: true })),
    ),
    watermark_value: hostedOnly(Nullable(Type.Object({}, { additionalProperties: true }))),
    has_inbox: hostedOnly(Type.Boolean()),
    dont_allow_folders_in_uploads: Type.Boolean(),
    paths: Type.Optional(Type.Array(Type.String(), { description: 'The shared paths (not in lists)' })),
    bundlepaths: Type.Optional(
      Type.Array(BundlePathSchema, { description: 'The shared paths (not in lists)' }),
    ),
  },
  { $id: 'Bundle', title: 'Bundle' },
)

const Paths = Type.Array(
  PathText(
    'A file or folder to share; the creator must be able to read it (and write to it, for a link that takes uploads)',
  ),
  { maxItems: 1000, description: 'The files and folders to share (at least one)' },
)
const When = (what: string) => Nullable(DateTimeText(`${what}; empty or null for none`, { blank: true }))
const Flag = (description: string) => Type.Optional(Type.Boolean({ description }))
const Ignored = Type.Optional(Type.Unknown({ description: IGNORED }))

const settings = {
  password: Type.Optional(
    Nullable(Type.String({ maxLength: 1024, description: 'Write-only; empty or null for none' })),
  ),
  code: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{4,100}$',
      maxLength: 100,
      description:
        '4 to 100 letters, digits, "-" and "_", unique in the site case-insensitively; generated if left out',
      ...checked('bundle-code'),
    }),
  ),
  description: Type.Optional(Nullable(FreeText(4096, 'lines', 'Public description'))),
  note: Type.Optional(Nullable(FreeText(4096, 'lines', 'Internal note'))),
  expires_at: Type.Optional(When('When the link stops working, in the future')),
  start_access_on_date: Type.Optional(When('When the link starts working, not after expires_at')),
  max_uses: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'At least 1; null for no limit',
        ...checked('bundle-max-uses'),
      }),
    ),
  ),
  permissions: Type.Optional(
    Type.Unsafe<string>({
      type: 'string',
      enum: [...BUNDLE_PERMISSIONS],
      description: 'What recipients may do (default read)',
      ...checked('bundle-permissions'),
    }),
  ),
  require_registration: Flag('Recipients give their name and e-mail address first'),
  require_share_recipient: Flag('Only recipients the link was sent to by e-mail may use it'),
  skip_name: Flag('Registration without a name'),
  skip_email: Flag('Registration without an e-mail address'),
  skip_company: Flag('Registration without a company'),
  path_template: Type.Optional(Nullable(FreeText(1024, 'line', 'Template of the subfolders uploads go to'))),
  path_template_time_zone: Type.Optional(Nullable(FreeText(255, 'line', 'Time zone of the path template'))),
  dont_separate_submissions_by_folder: Flag('Uploads are not put in a subfolder per submission'),
  send_email_receipt_to_uploader: Flag('Uploaders get a receipt by e-mail'),
  dont_allow_folders_in_uploads: Flag('Uploads may not create folders'),
  form_field_set_id: Ignored,
  clickwrap_id: Ignored,
  inbox_id: Ignored,
  snapshot_id: Ignored,
  create_snapshot: Ignored,
  finalize_snapshot: Ignored,
  watermark_attachment_file: Ignored,
  watermark_attachment_delete: Ignored,
}

const CreateBody = Type.Object(
  { user_id: Type.Optional(UserIdParam), paths: Paths, ...settings },
  { additionalProperties: false, title: 'BundleCreate' },
)

/** What the SDK's `save()` sends back: read-only fields must match what is shown, hosted-only ones are ignored. */
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))
const UpdateBody = Type.Object(
  {
    id: EchoId,
    paths: Type.Optional(Paths),
    ...settings,
    url: Echo,
    password_protected: Echo,
    preview_only: Echo,
    created_at: Echo,
    user_id: Echo,
    username: Echo,
    bundlepaths: Ignored,
    color_left: Ignored,
    color_link: Ignored,
    color_text: Ignored,
    color_top: Ignored,
    color_top_text: Ignored,
    require_logout: Ignored,
    clickwrap_body: Ignored,
    form_field_set: Ignored,
    watermark_attachment: Ignored,
    watermark_value: Ignored,
    has_inbox: Ignored,
  },
  { additionalProperties: false, title: 'BundleUpdate' },
)

const ListQuery = listQuery({ user_id: Type.Optional(UserIdParam) }, BUNDLE_LIST)

const tags = ['bundles']
const one = { 200: BundleSchema, ...errorResponses }

/** The Bundle resource (share links), their owners' side. */
export function bundleRoutes(c: HttpContext): Routes {
  const svc = c.services.bundles
  return async (app) => {
    app.get(
      '/bundles',
      {
        config: { access: 'files', xml: ['bundles', 'bundle'] },
        schema: {
          summary: 'List share links (site admins: every user’s; others: their own)',
          tags,
          querystring: ListQuery,
          response: { 200: Type.Array(BundleSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )

    app.get(
      '/bundles/:id',
      {
        config: { access: 'files', xml: 'bundle' },
        schema: { summary: 'Show a share link', tags, params: IdParams, response: one },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/bundles',
      {
        config: { access: 'files', xml: 'bundle' },
        schema: {
          summary: 'Create a share link (site admins, and users with attachments_permission)',
          tags,
          body: CreateBody,
          response: { 201: BundleSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/bundles/:id',
      {
        config: { access: 'files', xml: 'bundle' },
        schema: { summary: 'Change a share link', tags, params: IdParams, body: UpdateBody, response: one },
      },
      async (request) => {
        const { id: _id, ...input } = request.body
        return svc.update(request.principal, request.params.id, input)
      },
    )

    deleteById(
      app,
      '/bundles/:id',
      { summary: 'Delete a share link', tags },
      (p, id) => svc.remove(p, id),
      'files',
    )
  }
}
