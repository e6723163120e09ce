import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox'
import { ERRORS } from '../api/error-factories.js'
import type { ExportKindSpec } from '../exports/export-kind.js'
import type { HttpContext } from './http-context.js'
import { setCursorHeaders } from './pagination.js'
import type { Routes } from './route-types.js'
import { EchoId, errorResponses, Id, IdParams, Page, PerPage, UserIdParam } from './schemas.js'

/** GET /{id}: the Files.com SDKs repeat the id in the query string. */
const ShowQuery = Type.Object({ id: EchoId }, { additionalProperties: false })

/** The query of a results list: `id`, the export's id under the name the kind gives it. */
const resultsQuery = <P extends TProperties>(id: P) =>
  Type.Object(
    {
      ...id,
      user_id: Type.Optional(UserIdParam),
      cursor: Type.Optional(
        Type.String({ maxLength: 4096, description: 'Cursor from X-Service-Cursor-Next' }),
      ),
      per_page: PerPage,
      page: Page,
    },
    { additionalProperties: false },
  )

function checkShowEcho(params: { id: number }, query: { id?: number | undefined }): void {
  if (query.id !== undefined && query.id !== params.id) {
    throw ERRORS.requestParamsInvalid('The id in the query differs from the id in the path')
  }
}

/** What one kind of export's routes name: its paths, XML elements, schemas and summaries. */
export interface ExportRoutesOf {
  spec: ExportKindSpec
  /** `history_exports`: POST it, GET it `/:id`; the results are `history_export_results`. */
  collection: string
  /** The XML element of one export (`history-export`); the results' are `-results` and `-result`. */
  xml: string
  schema: TObject
  createBody: TObject
  resultSchema: TObject
  /** The results query's name for the export's id, and its description. */
  resultsId: { name: string; description: string }
  summaries: { create: string; show: string; results: string }
}

/** A results query as its schema validates it: the kind's id (required), then the list's fields. */
type ResultsParams = Static<ReturnType<typeof resultsQuery<Record<never, never>>>> & Record<string, unknown>

/**
 * An export's three routes, the same for every kind: create (201, built in the background), show
 * (poll until ready) and the JSON results (a forward-only cursor; the CSV is under /export_files).
 */
export function exportRoutes(c: HttpContext, kind: ExportRoutesOf): Routes {
  const svc = c.services.exports
  const { spec, collection, xml, summaries } = kind
  const tags = [collection]
  const results = `${collection.replace(/s$/, '')}_results`
  const ResultsQuery = resultsQuery({ [kind.resultsId.name]: Id(kind.resultsId.description) })
  return async (app) => {
    app.post(
      `/${collection}`,
      {
        config: { xml },
        schema: {
          summary: summaries.create,
          tags,
          body: kind.createBody,
          response: { 201: kind.schema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, spec, request.body)),
    )

    app.get(
      `/${collection}/:id`,
      {
        config: { xml },
        schema: {
          summary: summaries.show,
          tags,
          params: IdParams,
          querystring: ShowQuery,
          response: { 200: kind.schema, ...errorResponses },
        },
      },
      async (request) => {
        checkShowEcho(request.params, request.query)
        return svc.get(request.principal, spec, request.params.id)
      },
    )

    app.get(
      `/${results}`,
      {
        config: { xml: [`${xml}-results`, `${xml}-result`] },
        schema: {
          summary: summaries.results,
          tags: [results],
          querystring: ResultsQuery,
          response: { 200: Type.Array(kind.resultSchema), ...errorResponses },
        },
      },
      async (request, reply) => {
        // The id's name is the kind's, a computed key the type checker takes for any string's: the
        // query is read as the schema has validated it.
        const query = request.query as unknown as ResultsParams
        const page = await svc.results(request.principal, spec, {
          id: query[kind.resultsId.name] as number,
          user_id: query.user_id,
          cursor: query.cursor,
          per_page: query.per_page?.toString(),
        })
        setCursorHeaders(reply, { items: page.items, next: page.next, prev: null })
        return page.items
      },
    )
  }
}
