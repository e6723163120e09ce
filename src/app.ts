import swagger from '@fastify/swagger'
import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from 'fastify'
import type { Logger } from 'pino'
import { isDateTimeText } from './api/datetime.js'
import type { Config } from './config.js'
import type { Container } from './container.js'
import { answerClientError } from './http/client-error.js'
import { refuseEncodedBody } from './http/content-encoding.js'
import { handleError } from './http/error-handler.js'
import { API_PREFIX, type Format, negotiate, parseXmlBody, splitFormatSuffix, toXml } from './http/format.js'
import { lazyCompilers } from './http/lazy-compilers.js'
import { allowedMethods, noRouteError } from './http/method-not-allowed.js'
import { registerAuth } from './http/plugins/auth.js'
import { actionNotificationExportRoutes } from './http/routes/action-notification-exports.js'
import { apiKeyRoutes } from './http/routes/api-keys.js'
import { appRoutes } from './http/routes/apps.js'
import { bannedAddressRoutes } from './http/routes/banned-addresses.js'
import { behaviorRoutes } from './http/routes/behaviors.js'
import { billingRoutes } from './http/routes/billing.js'
import { bundleMailRoutes } from './http/routes/bundle-mail.js'
import { bundleRecordRoutes } from './http/routes/bundle-records.js'
import { bundleRoutes } from './http/routes/bundles.js'
import { publicBundleRoutes } from './http/routes/bundles-public.js'
import { eventRoutes } from './http/routes/events.js'
import { exportFileRoutes } from './http/routes/export-files.js'
import { fileOperationRoutes } from './http/routes/file-operations.js'
import { fileRoutes } from './http/routes/files.js'
import { folderRoutes } from './http/routes/folders.js'
import { groupRoutes } from './http/routes/groups.js'
import { registerHealthRoutes } from './http/routes/health.js'
import { historyRoutes } from './http/routes/history.js'
import { historyExportRoutes } from './http/routes/history-exports.js'
import { inboxRoutes } from './http/routes/inboxes.js'
import { permissionRoutes } from './http/routes/permissions.js'
import { publicKeyRoutes } from './http/routes/public-keys.js'
import { sessionRoutes } from './http/routes/sessions.js'
import { sftpHostKeyRoutes } from './http/routes/sftp-host-keys.js'
import { siteRoutes } from './http/routes/site.js'
import { swaggerRoutes } from './http/routes/swagger.js'
import { transferRoutes } from './http/routes/transfers.js'
import { twoFactorRoutes } from './http/routes/two-factor.js'
import { userRoutes } from './http/routes/users.js'
import { webhookDeliveryRoutes } from './http/routes/webhook-delivery.js'
import { webhookEndpointRoutes } from './http/routes/webhook-endpoints.js'
import { webhookSettingsRoutes } from './http/routes/webhook-settings.js'
import { zipDownloadRoutes } from './http/routes/zip-downloads.js'
import { FilePathParams } from './http/schemas.js'
import { connectionOptions, guardBodyRate } from './http/slow-clients.js'
import { prepareBody } from './http/text-values.js'
import { registerWebUi } from './http/web-ui.js'
import { redactUrl } from './logger.js'
import { metrics } from './metrics/metrics.js'
import './http/request-context.js'
import { ERRORS } from './api/error-factories.js'
import { registerDav } from './dav/dav-plugin.js'

const FORMAT = Symbol('wharf.format')
const BAD_SUFFIX = Symbol('wharf.badSuffix')

type RouteTable = { method: string; url: string; schema?: unknown }[]

/** Builds the HTTP application around a container; it neither listens nor reads the environment. */
export async function buildApp(container: Container, opts: { logger?: Logger } = {}) {
  const { config } = container
  const compilers = lazyCompilers()
  const app = createFastify(config, compilers, opts.logger)
  // Every route as registered (method, URL), for the Swagger test: Fastify's printRoutes cannot
  // show wildcard routes faithfully.
  const routeTable: RouteTable = []
  addDecorations(app, routeTable, compilers, config, opts.logger)
  addFormatHooks(app)
  addBodyParsers(app)
  await registerSwagger(app)
  await registerApi(app, container)
  await mountDavAndWebUi(app, container)
  answerUnknownRoutes(app, routeTable)
  return app
}

/** The Fastify instance and its options: logging, limits, validation, the format suffix, client errors. */
function createFastify(
  config: Config,
  compilers: ReturnType<typeof lazyCompilers>,
  logger: Logger | undefined,
) {
  return Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    // One access-log line per request (below) instead of Fastify's two, and no child logger per
    // request: pino's child() costs more than the rest of an authenticated read.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger) => logger,
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    ...connectionOptions(config.http),
    // Signed download tokens and file names are path segments longer than find-my-way's default 100.
    routerOptions: { maxParamLength: 8192 },
    ajv: {
      customOptions: {
        // No silent coercion: JSON values must have their schema's type. Text (path, query, XML)
        // is converted strictly by schema before validation (http/text-values.ts).
        coerceTypes: false,
        // Errors carry their schema, so that a field can say which error its refusal is.
        verbose: true,
        removeAdditional: false,
        useDefaults: true,
        allErrors: false,
        keywords: ['x-nullable', 'x-check', 'x-exclusive', 'x-exclusive-required'],
        // Routes document their sort/filter keys by name as well as by pattern (for Swagger).
        allowMatchingProperties: true,
        // Boolean filters take `true`/`false` and, as before, `1`/`0`: a union type, on purpose.
        allowUnionTypes: true,
      },
      // `date-time` is what the API's date parser takes, not RFC 3339 alone (decisions.md).
      onCreate: (ajv) => ajv.addFormat('date-time', { type: 'string', validate: isDateTimeText }),
    },
    // Each route's validators and serializers are compiled by its first request (lazy-compilers.ts).
    schemaController: { compilersFactory: compilers.compilersFactory },
    rewriteUrl(req) {
      const r = splitFormatSuffix(req.url ?? '/')
      ;(req as any)[FORMAT] = r.format
      ;(req as any)[BAD_SUFFIX] = r.badSuffix
      return r.url
    },
    // Requests Node's parser refuses (431, 408, 400) are answered in Wharf's error body too.
    clientErrorHandler: answerClientError,
  }) as unknown as FastifyInstance
}

/** The route table, request decorations, the error handler, the body-rate guard and the access log. */
function addDecorations(
  app: FastifyInstance,
  routeTable: RouteTable,
  compilers: ReturnType<typeof lazyCompilers>,
  config: Config,
  logger: Logger | undefined,
): void {
  app.decorate('routeTable', routeTable)
  app.decorate('compileSchemas', compilers.compilePending)
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat())
      routeTable.push({ method, url: route.url, schema: route.schema })
  })
  app.decorateRequest('principal', null as any)
  app.decorateRequest('format', 'json' as Format)
  app.setErrorHandler(handleError)
  guardBodyRate(app, config.http)
  app.addHook('onResponse', (request, reply, done) => {
    if (!metrics.on) return done()
    // The route's pattern, not the path: one series per route, whatever the paths asked.
    const route = request.routeOptions.url ?? '(none)'
    metrics.httpRequests.inc({ method: request.method, route, status: reply.statusCode })
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000)
    done()
  })
  if (logger?.isLevelEnabled('info')) {
    const log = logger
    app.addHook('onResponse', (request, reply, done) => {
      log.info(
        {
          reqId: request.id,
          method: request.method,
          url: redactUrl(request.url),
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
          ip: request.ip,
        },
        'request',
      )
      done()
    })
  }
}

/** Each API request's format (JSON or XML), and the refusal of an encoded body. */
function addFormatHooks(app: FastifyInstance): void {
  // Format first, so that even the earliest error speaks the caller's format.
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw as any
    // Only the API speaks XML: the web interface's files go out as they are, whatever a browser accepts.
    if (!request.url.startsWith(API_PREFIX)) return done()
    request.format = raw[FORMAT] ?? negotiate(request.headers.accept)
    if (raw[BAD_SUFFIX] !== undefined) {
      return done(
        ERRORS.unsupportedHttpResponseFormat(
          `Unsupported response format ".${raw[BAD_SUFFIX]}": use .json or .xml`,
        ),
      )
    }
    if (request.format === 'xml') {
      const xml = request.routeOptions.config?.xml
      const [root, item] = Array.isArray(xml) ? xml : [xml ?? 'response', undefined]
      const floats = new Set(request.routeOptions.config?.xmlFloats ?? [])
      reply.serializer((payload: unknown) => toXml(payload, root, item, floats))
      reply.type('application/xml; charset=utf-8')
    }
    done()
  })

  app.addHook('onRequest', (request, reply, done) =>
    request.url.startsWith(API_PREFIX) ? refuseEncodedBody(request, reply, done) : done(),
  )
}

/** Bodies: JSON or XML by Content-Type; any other body is refused (decisions.md, "Formats"). */
function addBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  const jsonParser = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if ((body as string).trim() === '') return done(null, {})
    jsonParser(req, body as string, (err, value) => {
      if (err) return done(ERRORS.invalidBody(`Malformed JSON: ${err.message}`), undefined)
      // `null` would otherwise pass for "no body"; like any other non-object it is not a set of fields.
      if (value === null) {
        return done(ERRORS.invalidBody('The request body must be an object of named fields'), undefined)
      }
      done(null, value)
    })
  })
  app.addContentTypeParser(['application/xml', 'text/xml'], { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseXmlBody(body as string))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
  app.addContentTypeParser('*', (req, _payload, done) => {
    done(
      ERRORS.unsupportedMediaType(
        `Unsupported Content-Type "${req.headers['content-type'] ?? ''}": send application/json or application/xml`,
      ),
      undefined,
    )
  })

  // Only routes that take a body get the body hooks: the hot read paths carry none of this.
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return
    const own = route.preValidation ? [route.preValidation].flat() : []
    route.preValidation = [prepareBody, checkEchoedId, ...own] as typeof route.preValidation
  })
}

/** The API's Swagger description, from every route's schema. */
async function registerSwagger(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    swagger: {
      info: {
        title: 'Wharf REST API',
        description:
          'Files.com-compatible REST API of Wharf, a self-hosted file storage and transfer service.',
        version: '1',
      },
      basePath: API_PREFIX,
      consumes: ['application/json', 'application/xml'],
      produces: ['application/json', 'application/xml'],
      securityDefinitions: {
        api_key: { type: 'apiKey', name: 'X-ServiceAPI-Key', in: 'header' },
        session: { type: 'apiKey', name: 'X-ServiceAPI-Auth', in: 'header' },
      },
      security: [{ api_key: [] }, { session: [] }],
    },
    transform: ({ schema, url }) => {
      const rel = url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) || '/' : url
      if (!rel.endsWith('*')) return { schema: schema as any, url: rel }
      // File routes end in a wildcard (the file path, slashes and all): Swagger names it `path`.
      // Other parameters before the wildcard (a share link's code) keep their own schemas.
      const own = { ...((schema as any).params?.properties ?? {}) }
      delete own['*']
      const params = {
        ...FilePathParams,
        properties: { ...own, ...FilePathParams.properties },
        required: [...Object.keys(own), ...(FilePathParams.required ?? [])],
      }
      return { schema: { ...(schema as any), params }, url: `${rel.slice(0, -1)}{path}` }
    },
  })
}

/** The REST API's routes, under /api/rest/v1, behind its authentication. */
async function registerApi(app: FastifyInstance, container: Container): Promise<void> {
  await app.register(
    async (api) => {
      registerAuth(api, container)
      await api.register(sessionRoutes(container))
      await api.register(apiKeyRoutes(container))
      await api.register(userRoutes(container))
      await api.register(permissionRoutes(container))
      await api.register(groupRoutes(container))
      await api.register(siteRoutes(container))
      await api.register(fileRoutes(container))
      await api.register(transferRoutes(container))
      await api.register(folderRoutes(container))
      await api.register(fileOperationRoutes(container))
      await api.register(zipDownloadRoutes(container))
      await api.register(historyRoutes(container))
      await api.register(webhookSettingsRoutes(container))
      await api.register(webhookDeliveryRoutes(container))
      await api.register(webhookEndpointRoutes(container))
      await api.register(eventRoutes(container))
      await api.register(actionNotificationExportRoutes(container))
      await api.register(historyExportRoutes(container))
      await api.register(exportFileRoutes(container))
      await api.register(billingRoutes(container))
      await api.register(appRoutes(container))
      await api.register(publicKeyRoutes(container))
      await api.register(twoFactorRoutes(container))
      await api.register(behaviorRoutes(container))
      await api.register(bundleRoutes(container))
      await api.register(bundleMailRoutes(container))
      await api.register(bundleRecordRoutes(container))
      await api.register(inboxRoutes(container))
      await api.register(publicBundleRoutes(container))
      await api.register(sftpHostKeyRoutes(container))
      await api.register(bannedAddressRoutes(container))
      await api.register(swaggerRoutes())
    },
    { prefix: API_PREFIX },
  )
}

/** Health and readiness, WebDAV (when on) and the web interface, beside the API. */
async function mountDavAndWebUi(app: FastifyInstance, container: Container): Promise<void> {
  const { config } = container
  registerHealthRoutes(app, container.readiness)
  if (config.dav.enabled) await registerDav(app, container, config)
  // Where the blob store has clients send parts itself, the interface's uploads go there too.
  await registerWebUi(app, config.webDir, (await container.blobs.directOrigins?.()) ?? [])
}

/**
 * A path without the request's method: 405 with Allow, or 404 when no method has it. Decided at
 * onRequest, before any body is read, so a body-carrying method (QUERY, an unknown one) is not
 * refused for its Content-Type first.
 */
function answerUnknownRoutes(app: FastifyInstance, routeTable: RouteTable): void {
  const allowedFor = allowedMethods(routeTable)
  const noRoute = (request: FastifyRequest) => {
    const path = request.url.split('?')[0] ?? '/'
    return noRouteError(request.method, path, allowedFor(path))
  }
  app.addHook('onRequest', (request, _reply, done) => done(request.is404 ? noRoute(request) : undefined))
  app.setNotFoundHandler(async (request) => {
    throw noRoute(request)
  })
}

/** The Files.com SDKs repeat the record id in the body of updates and deletes; it must agree. */
async function checkEchoedId(request: FastifyRequest): Promise<void> {
  const pathId = (request.params as Record<string, unknown> | undefined)?.['id']
  const bodyId = (request.body as Record<string, unknown> | undefined)?.['id']
  if (pathId !== undefined && bodyId !== undefined && String(pathId) !== String(bodyId)) {
    throw ERRORS.requestParamsInvalid('The id in the body differs from the id in the path')
  }
}
