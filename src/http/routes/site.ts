import { Type } from '@sinclair/typebox'
import { isSiteAdmin } from '../../identity/principal.js'
import {
  MAX_PRIOR_CEILING,
  MIN_LENGTH_CEILING,
  MIN_LENGTH_FLOOR,
  VALIDITY_DAYS_CEILING,
} from '../../modules/passwords/password-rules.js'
import { SITE_REQUIRE_2FA_USER_TYPES } from '../../modules/two-factor/two-factor-service.js'
import { ALLOWED_IPS, AllowedIpsText } from '../access-schemas.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, Nullable, StringEnum } from '../schemas.js'

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
    require_2fa: Type.Boolean({ description: 'Require two-factor sign-in (of require_2fa_user_type)' }),
    require_2fa_user_type: Type.String({ description: 'all or site_admins' }),
    allowed_ips: Type.Optional(Nullable(Type.String({ description: `${ALLOWED_IPS} (site admins only)` }))),
    session: Nullable(
      Type.Object({
        two_factor_setup_needed: Type.Boolean({
          description: 'The session can only enrol a two-factor method until one is confirmed',
        }),
      }),
    ),
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
    require_2fa: Type.Optional(Type.Boolean({ description: 'Require two-factor sign-in' })),
    require_2fa_user_type: Type.Optional(StringEnum(SITE_REQUIRE_2FA_USER_TYPES)),
    session: Echo,
  },
  { additionalProperties: false, title: 'SiteUpdate' },
)

const tags = ['site']
const one = { 200: SiteSchema, ...errorResponses }

export function siteRoutes(c: HttpContext): Routes {
  const svc = c.services.site
  const access = c.services.access
  const twoFactor = c.services.twoFactor
  return async (app) => {
    app.get(
      '/site',
      {
        // Every signed-in user reads the rules their password and sign-in must meet, also a
        // session that must first change its password or enrol a two-factor method (the web
        // interface learns here that it must); the address limits only site admins.
        config: { xml: 'site', passwordChange: 'any', twoFactorSetup: true },
        schema: { summary: "Show the site's settings (allowed_ips: site admins only)", tags, response: one },
      },
      async (request) => {
        const p = request.principal
        return {
          ...(await svc.show(p)),
          ...(await twoFactor.siteRule(p.siteId)),
          ...(isSiteAdmin(p) ? { allowed_ips: (await access.showSite(p, c.site.name)).allowed_ips } : {}),
          session: p.sessionHash ? { two_factor_setup_needed: p.twoFactorSetup === true } : null,
        }
      },
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
        const p = request.principal
        const {
          allowed_ips,
          require_2fa,
          require_2fa_user_type,
          session: _session,
          ...rules
        } = request.body as Record<string, unknown>
        const input = { allowed_ips: allowed_ips as string | null | undefined }
        // Every field is checked before any is saved: a refused list leaves the rules as they were.
        access.checkSite(p, c.site.name, input)
        const site = await svc.update(p, rules)
        const limits = await access.updateSite(p, c.site.name, input)
        await twoFactor.setSiteRule(p.siteId, {
          require_2fa: require_2fa as boolean | undefined,
          require_2fa_user_type: require_2fa_user_type as string | undefined,
        })
        return {
          ...site,
          ...(await twoFactor.siteRule(p.siteId)),
          allowed_ips: limits.allowed_ips,
          session: p.sessionHash ? { two_factor_setup_needed: p.twoFactorSetup === true } : null,
        }
      },
    )
  }
}
