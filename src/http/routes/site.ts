import { Type } from '@sinclair/typebox'
import { ALLOWED_IPS, AllowedIpsText } from '../access-schemas.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Nullable } from '../schemas.js'

export const SiteSchema = Type.Object(
  {
    name: Type.String({ description: 'The site’s name (SITE_NAME)' }),
    allowed_ips: Nullable(Type.String({ description: ALLOWED_IPS })),
  },
  { $id: 'Site', title: 'Site' },
)

const UpdateBody = Type.Object(
  {
    allowed_ips: Type.Optional(Nullable(AllowedIpsText('; must include the caller’s own address'))),
    // Read-only: the Files.com SDK sends it back; it is set by SITE_NAME.
    name: Type.Optional(Type.Unknown({ readOnly: true })),
  },
  { additionalProperties: false, title: 'SiteUpdate' },
)

const tags = ['site']
const one = { 200: SiteSchema, ...errorResponses }

export function siteRoutes(c: HttpContext): Routes {
  const svc = c.services.access
  return async (app) => {
    app.get(
      '/site',
      {
        config: { xml: 'site' },
        schema: { summary: 'Show the site’s settings (site admins)', tags, response: one },
      },
      async (request) => svc.showSite(request.principal, c.site.name),
    )

    app.patch(
      '/site',
      {
        config: { xml: 'site' },
        schema: {
          summary: 'Change the site’s settings (site admins); they apply to the next login',
          tags,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => svc.updateSite(request.principal, c.site.name, request.body),
    )
  }
}
