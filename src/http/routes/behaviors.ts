import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { BEHAVIOR_LIST } from '../../modules/behaviors/behavior-repository.js'
import type { BehaviorJson } from '../../modules/behaviors/behavior-service.js'
import { AVAILABLE_TYPES, WEBHOOK_BEHAVIOR_TRIGGERS } from '../../modules/behaviors/behavior-types.js'
import { MAX_URL_LENGTH, URL_PATTERN } from '../../modules/webhooks/webhook-settings.js'
import { deleteById } from '../delete-by-id.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { EchoId, errorResponses, FreeText, IdParams, listQuery, Nullable, PathText } from '../schemas.js'
import { WebhookTestResultSchema } from './webhook-delivery.js'

const ValueObject = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'Settings of the behavior type (see the README); a webhook’s header values and verification token are never shown (null)',
  },
)

export const BehaviorSchema = Type.Object(
  {
    id: Type.Integer(),
    path: Type.String({ description: 'Folder path the behavior is on' }),
    attachment_url: Nullable(Type.String({ description: 'Always null: no Wharf behavior takes a file' })),
    behavior: Type.String({ description: `Behavior type: ${AVAILABLE_TYPES.join(', ')}` }),
    name: Nullable(Type.String()),
    description: Nullable(Type.String()),
    value: ValueObject,
    disable_parent_folder_behavior: Type.Boolean({
      description: 'Cancels the behaviors of the same type inherited from folders above, here and below',
    }),
    recursive: Type.Boolean({ description: 'Applies to every folder inside this one too' }),
  },
  { $id: 'Behavior', title: 'Behavior' },
)

const Value = Type.Unsafe<unknown>({
  type: 'string',
  maxLength: 262_144,
  description:
    'The type’s settings as JSON text, or the same as a JSON object (XML bodies send JSON text). A webhook header given as null keeps its stored value',
  ...checked('behavior-value'),
})

const Flags = {
  recursive: Type.Optional(
    Type.Boolean({ description: 'Applies to every folder inside this one too (default false)' }),
  ),
  disable_parent_folder_behavior: Type.Optional(
    Type.Boolean({
      description: 'Cancels the behaviors of the same type inherited from the folders above (default false)',
    }),
  ),
  name: Type.Optional(Nullable(FreeText(255, 'line', 'A name for this behavior'))),
  description: Type.Optional(Nullable(FreeText(4096, 'lines', 'A description of this behavior'))),
}

const CreateBody = Type.Object(
  {
    path: PathText('Folder path the behavior is on'),
    behavior: Type.Unsafe<string>({
      type: 'string',
      enum: [...AVAILABLE_TYPES],
      description:
        'Behavior type (webhook and the app catalog’s other folder behavior types: 422 naming the available ones)',
      ...checked('behavior-type'),
    }),
    value: Type.Optional(Value),
    ...Flags,
  },
  { additionalProperties: false, title: 'BehaviorCreate' },
)

/** What the SDK's `save()` sends back: path, behavior and attachment_url must be as shown. */
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))
const UpdateBody = Type.Object(
  {
    id: EchoId,
    path: Echo,
    behavior: Echo,
    attachment_url: Echo,
    attachment_delete: Type.Optional(
      Type.Boolean({ description: 'Ignored: no Wharf behavior takes a file' }),
    ),
    value: Type.Optional(Value),
    ...Flags,
  },
  { additionalProperties: false, title: 'BehaviorUpdate' },
)

/** One of some texts; the service refuses others with 422 naming the field. */
const Choice = (values: readonly string[], description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...values], description, ...checked('webhook-choice') })

/** Names to texts, as an object or the same as JSON text (XML bodies send text). */
const TextMap = (description: string) =>
  Type.Optional(
    Type.Unknown({ description: `${description}: an object of names and texts, or the same as JSON text` }),
  )

const WebhookTestBody = Type.Object(
  {
    url: Type.String({
      maxLength: MAX_URL_LENGTH,
      pattern: URL_PATTERN,
      description: 'The http(s) URL to send the test request to',
      ...checked('url'),
    }),
    method: Type.Optional(Choice(['POST', 'GET'], 'POST (default) or GET')),
    encoding: Type.Optional(Choice(['JSON', 'XML', 'RAW'], 'JSON (default), XML or RAW (a form)')),
    headers: TextMap('Headers to send'),
    body: TextMap('Fields to add to the body'),
    action: Type.Optional(
      Choice(
        ['Test', ...WEBHOOK_BEHAVIOR_TRIGGERS],
        'The operation the test names (default Test; a verb names its usual operation)',
      ),
    ),
  },
  { additionalProperties: false, title: 'BehaviorWebhookTest' },
)

/** A text map given as JSON text, parsed (a text that is no JSON stays, for the check to refuse). */
function parsedMap(v: unknown): unknown {
  if (typeof v !== 'string') return v
  if (v.trim() === '') return undefined
  try {
    return JSON.parse(v)
  } catch {
    return v
  }
}

const ListQuery = listQuery({}, BEHAVIOR_LIST)
const FolderQuery = listQuery(
  {
    path: Type.Optional(
      Type.String({ maxLength: 6000, description: 'Ignored: the Files.com SDKs repeat the path here' }),
    ),
    ancestor_behaviors: Type.Optional(
      Type.Boolean({
        description: 'Every behavior that applies to the folder, the inherited ones included',
      }),
    ),
  },
  BEHAVIOR_LIST,
)
const PathParams = Type.Object({ '*': Type.String({ description: 'Folder path (slashes raw or %2F)' }) })

const tags = ['behaviors']
const one = { 200: BehaviorSchema, ...errorResponses }
const many = { 200: Type.Array(BehaviorSchema), ...errorResponses }

/** In XML a behavior's value is JSON text, as the model has it. */
function present(request: FastifyRequest, b: BehaviorJson): unknown {
  return request.format === 'xml' ? { ...b, value: JSON.stringify(b.value) } : b
}

/** The Behavior resource: folder behaviors (upload rules, per-folder webhooks). */
export function behaviorRoutes(c: HttpContext): Routes {
  const svc = c.services.behaviors
  const webhooks = c.services.webhooks
  return async (app) => {
    app.post(
      '/behaviors/webhook/test',
      {
        config: { xml: 'webhook-test-result' },
        schema: {
          summary: 'Send one test request with webhook behavior settings and report the answer',
          tags,
          body: WebhookTestBody,
          response: { 200: WebhookTestResultSchema, ...errorResponses },
        },
      },
      async (request) => {
        const b = request.body
        const test = await svc.checkWebhookTest(request.principal, {
          ...b,
          headers: parsedMap(b.headers),
          body: parsedMap(b.body),
        })
        return webhooks.sendBehaviorTest(request.principal, test)
      },
    )

    app.get(
      '/behaviors',
      {
        config: { xml: ['behaviors', 'behavior'] },
        schema: { summary: 'List folder behaviors', tags, querystring: ListQuery, response: many },
      },
      async (request, reply) =>
        sendPage(reply, await svc.list(request.principal, request.query)).map((b) => present(request, b)),
    )

    app.get(
      '/behaviors/folders/*',
      {
        config: { xml: ['behaviors', 'behavior'] },
        schema: {
          summary: 'List the behaviors of a folder (with ancestor_behaviors: all that apply to it)',
          tags,
          params: PathParams,
          querystring: FolderQuery,
          response: many,
        },
      },
      async (request, reply) =>
        sendPage(reply, await svc.listFor(request.principal, request.params['*'], request.query)).map((b) =>
          present(request, b),
        ),
    )

    app.get(
      '/behaviors/:id',
      {
        config: { xml: 'behavior' },
        schema: { summary: 'Show a folder behavior', tags, params: IdParams, response: one },
      },
      async (request) => present(request, await svc.get(request.principal, request.params.id)),
    )

    app.post(
      '/behaviors',
      {
        config: { xml: 'behavior' },
        schema: {
          summary: 'Add a folder behavior',
          tags,
          body: CreateBody,
          response: { 201: BehaviorSchema, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(present(request, await svc.create(request.principal, request.body))),
    )

    app.patch(
      '/behaviors/:id',
      {
        config: { xml: 'behavior' },
        schema: {
          summary: 'Change a folder behavior',
          tags,
          params: IdParams,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) =>
        present(request, await svc.update(request.principal, request.params.id, request.body)),
    )

    deleteById(app, '/behaviors/:id', { summary: 'Delete a folder behavior', tags }, (p, id) =>
      svc.remove(p, id),
    )
  }
}
