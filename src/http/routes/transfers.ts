import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { sendFileBytes } from '../file-bytes.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { ErrorSchema, SignedLinkQuery } from '../schemas.js'

const PartParams = Type.Object(
  {
    ref: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'The upload' }),
    part: Type.Integer({ minimum: 1, maximum: 10_000, description: 'Part number' }),
  },
  { additionalProperties: false },
)
const LinkParams = Type.Object(
  {
    token: Type.String({ maxLength: 2048, description: 'Signed, expiring token' }),
    name: Type.String({ maxLength: 5000, description: 'The file’s name (for the browser; not checked)' }),
  },
  { additionalProperties: false },
)

const linkErrors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema }
const tags = ['files']

/**
 * The two routes reached without credentials, by signed URLs that the authenticated routes hand
 * out: `upload_uri` (PUT a part's bytes) and `download_uri` (GET the bytes, with Range).
 */
export function transferRoutes(c: HttpContext): Routes {
  const parts = c.services.uploads.parts
  const downloads = c.services.downloads
  return async (app) => {
    // A part is raw bytes of any Content-Type, up to 5 GiB: nothing may read it before the
    // handler has checked the link, and then it is streamed to disk, never buffered.
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined))

    app.put(
      '/upload_parts/:ref/:part',
      {
        config: { auth: false },
        schema: {
          summary: 'Send the bytes of one upload part to its signed upload_uri (no credentials)',
          description:
            "With a `Content-MD5` header (RFC 1864: the base64 of the bytes' md5) the part is checked as it arrives, and refused with 400 `bad-request/invalid-body` if its bytes differ (nothing of it is kept).",
          tags,
          security: [],
          consumes: ['application/octet-stream'],
          params: PartParams,
          querystring: SignedLinkQuery,
          response: {
            200: Type.String({ maxLength: 0, description: 'Empty: the part is stored (ETag names it)' }),
            ...linkErrors,
          },
        },
      },
      async (request, reply) => {
        const { ref, part } = request.params
        const declared = request.headers['content-length']
        const contentMd5 = request.headers['content-md5']
        try {
          await parts.receive(
            ref,
            part,
            request.query,
            request.raw,
            declared === undefined ? undefined : Number(declared),
            typeof contentMd5 === 'string' ? contentMd5 : undefined,
          )
        } catch (err) {
          // A client that hangs up mid-part is not a server failure: nothing was kept.
          if (!(err instanceof ApiError) && !request.raw.complete) {
            throw ERRORS.invalidBody('The part upload was interrupted; nothing was kept')
          }
          throw err
        }
        return reply.code(200).header('ETag', `"${ref}-${part}"`).send()
      },
    )

    const serveLink = async (token: string, request: FastifyRequest, reply: FastifyReply) =>
      sendFileBytes(request, reply, downloads, await downloads.forLink(token))
    const linkSchema = {
      params: LinkParams,
      response: {
        200: Type.String({ format: 'binary' }),
        206: Type.String({ format: 'binary' }),
        ...linkErrors,
        416: ErrorSchema,
      },
    }
    app.get(
      '/downloads/:token/:name',
      {
        config: { auth: false },
        // HEAD is its own route below: Fastify's automatic one would announce a length of 0.
        exposeHeadRoute: false,
        schema: {
          summary: 'The bytes behind a download_uri (no credentials; Range and HEAD supported)',
          tags,
          security: [],
          produces: ['application/octet-stream', 'application/json', 'application/xml'],
          ...linkSchema,
        },
      },
      async (request, reply) => serveLink(request.params.token, request, reply),
    )
    app.head(
      '/downloads/:token/:name',
      { config: { auth: false }, schema: { hide: true, ...linkSchema } },
      async (request, reply) => serveLink(request.params.token, request, reply),
    )
  }
}
