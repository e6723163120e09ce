import { Type } from '@sinclair/typebox'
import {
  MAX_PRIOR_CEILING,
  MIN_LENGTH_CEILING,
  MIN_LENGTH_FLOOR,
  VALIDITY_DAYS_CEILING,
} from '../../modules/passwords/password-rules.js'
import { ALLOWED_IPS, AllowedIpsText } from '../access-schemas.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Nullable } from '../schemas.js'

const rules = {
  password_min_length: Type.Integer({
    minimum: MIN_LENGTH_FLOOR,
    maximum: MIN_LENGTH_CEILING,
    ...checked('range'),
    description: `Shortest password length for users (${MIN_LENGTH_FLOOR} to ${MIN_LENGTH_CEILING}; default 8)`,
  }),
  password_require_letter: Type.Boolean({ description: 'Require a letter in passwords' }),
  password_require_mixed: Type.Boolean({ description: 'Require lower and upper case letters in passwords' }),
  password_require_number: Type.Boolean({ description: 'Require a number in passwords' }),
  password_require_special: Type.Boolean({
    description: 'Require a special character (neither a letter nor a number) in passwords',
  }),
  max_prior_passwords: Type.Integer({
    minimum: 0,
    maximum: MAX_PRIOR_CEILING,
    ...checked('range'),
    description: `Number of prior passwords (the current one first) a new one may not repeat (0 to ${MAX_PRIOR_CEILING})`,
  }),
  password_validity_days: Nullable(
    Type.Integer({
      minimum: 0,
      maximum: VALIDITY_DAYS_CEILING,
      ...checked('range'),
      description: `Number of days a password is valid (1 to ${VALIDITY_DAYS_CEILING}); null or 0: forever`,
    }),
  ),
}

export const SiteSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String({ description: 'The site name (SITE_NAME)' }),
    created_at: Type.String({ format: 'date-time' }),
    ...rules,
    allowed_ips: Nullable(Type.String({ description: ALLOWED_IPS })),
  },
  { $id: 'Site', title: 'Site' },
)

const Echo = Type.Optional(Type.Unknown({ readOnly: true }))

// Ranges are the service's (422 naming the field); types are checked here (400).
const UpdateBody = Type.Object(
  {
    id: Echo,
    name: Echo,
    created_at: Echo,
    ...Object.fromEntries(Object.entries(rules).map(([k, v]) => [k, Type.Optional(v)])),
    allowed_ips: Type.Optional(Nullable(AllowedIpsText('; must include the caller’s own address'))),
  },
  { additionalProperties: false, title: 'SiteUpdate' },
)

const tags = ['site']
const one = { 200: SiteSchema, ...errorResponses }

export function siteRoutes(c: HttpContext): Routes {
  const svc = c.services.site
  const access = c.services.access
  return async (app) => {
    app.get(
      '/site',
      {
        config: { xml: 'site' },
        schema: { summary: "Show the site's settings (site admins)", tags, response: one },
      },
      async (request) => ({
        ...(await svc.get(request.principal)),
        allowed_ips: (await access.showSite(request.principal, c.site.name)).allowed_ips,
      }),
    )

    app.patch(
      '/site',
      {
        config: { xml: 'site' },
        schema: {
          summary:
            "Change the site's password rules and address limits (site admins); they apply to the next password set or login",
          tags,
          body: UpdateBody,
          response: one,
        },
      },
      async (request) => {
        const { allowed_ips, ...rules } = request.body as Record<string, unknown>
        const input = { allowed_ips: allowed_ips as string | null | undefined }
        // Every field is checked before any is saved: a refused list leaves the rules as they were.
        access.checkSite(request.principal, c.site.name, input)
        const site = await svc.update(request.principal, rules)
        const limits = await access.updateSite(request.principal, c.site.name, input)
        return { ...site, allowed_ips: limits.allowed_ips }
      },
    )
  }
}
