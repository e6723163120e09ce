import { Type } from '@sinclair/typebox'
import { isReadOnlyAdmin, isSiteAdmin, type Principal } from '../../identity/principal.js'
import {
  MAX_PRIOR_CEILING,
  MIN_LENGTH_CEILING,
  MIN_LENGTH_FLOOR,
  VALIDITY_DAYS_CEILING,
} from '../../modules/passwords/password-rules.js'
import type { ContactInput } from '../../modules/sites/billing-contact.js'
import { SITE_REQUIRE_2FA_USER_TYPES } from '../../modules/two-factor/two-factor-service.js'
import { EMAIL_PATTERN } from '../../modules/users/user-model.js'
import { ALLOWED_IPS, AllowedIpsText } from '../access-schemas.js'
import { checked } from '../field-checks.js'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, FreeText, Nullable, StringEnum } from '../schemas.js'

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

const BILLING = 'billing information: site admins and users with billing_permission see it'

/** The site's billing contact as PATCH /site takes it (billing_permission). */
const contact = {
  contact_name: Nullable(FreeText(255, 'line', `Site main contact name (${BILLING})`)),
  phone: Nullable(FreeText(64, 'line', `Site phone number (${BILLING})`)),
  email: Nullable(
    Type.String({
      maxLength: 255,
      pattern: EMAIL_PATTERN,
      description: `Main e-mail address of the site's account (${BILLING}); blank or null for none`,
      ...checked('email'),
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
    contact_name: Type.Optional(
      Nullable(Type.String({ description: `Site main contact name (${BILLING})` })),
    ),
    phone: Type.Optional(Nullable(Type.String({ description: `Site phone number (${BILLING})` }))),
    email: Type.Optional(
      Nullable(Type.String({ description: `Main e-mail address of the site's account (${BILLING})` })),
    ),
    session: Nullable(
      Type.Object({
        two_factor_setup_needed: Type.Boolean({
          description: 'The session can only enrol a two-factor method until one is confirmed',
        }),
        read_only: Type.Boolean({
          description: 'The session can change nothing (a read-only site administrator’s)',
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
    contact_name: Type.Optional(contact.contact_name),
    phone: Type.Optional(contact.phone),
    email: Type.Optional(contact.email),
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
  const billing = c.services.billingContact

  /** The Site as `p` may see it: the address limits for site admins, the contact for billing. */
  const siteAnswer = async (p: Principal) => ({
    ...(await svc.show(p)),
    ...(await twoFactor.siteRule(p.siteId)),
    ...(isSiteAdmin(p) ? { allowed_ips: (await access.showSite(p, c.site.name)).allowed_ips } : {}),
    ...(await billing.show(p)),
    session: p.sessionHash
      ? { two_factor_setup_needed: p.twoFactorSetup === true, read_only: isReadOnlyAdmin(p.user) }
      : null,
  })

  return async (app) => {
    app.get(
      '/site',
      {
        // Every signed-in user reads the rules their password and sign-in must meet, also a
        // session that must first change its password or enrol a two-factor method (the web
        // interface learns here that it must); the address limits only site admins, the billing
        // contact only site admins and users with billing_permission.
        config: { xml: 'site', passwordChange: 'any', twoFactorSetup: true },
        schema: {
          summary:
            "Show the site's settings (allowed_ips: site admins only; contact_name, phone, email: site admins and billing_permission)",
          tags,
          response: one,
        },
      },
      async (request) => siteAnswer(request.principal),
    )

    app.patch(
      '/site',
      {
        config: { xml: 'site' },
        schema: {
          summary:
            "Change the site's password rules and address limits (site admins) and its billing contact (billing_permission); they apply to the next password set or login",
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
          contact_name,
          phone,
          email,
          ...rules
        } = request.body as Record<string, unknown>
        const input = { allowed_ips: allowed_ips as string | null | undefined }
        // Every field is checked before any is saved: a refused list leaves the rules as they were.
        const contact = billing.check(p, { contact_name, phone, email } as ContactInput)
        // A user with billing_permission alone may send the contact's fields and nothing else.
        const settings =
          [allowed_ips, require_2fa, require_2fa_user_type].some((v) => v !== undefined) ||
          Object.values(rules).some((v) => v !== undefined)
        if (settings || contact === undefined) {
          access.checkSite(p, c.site.name, input)
          await svc.update(p, rules)
          await access.updateSite(p, c.site.name, input)
          await twoFactor.setSiteRule(p.siteId, {
            require_2fa: require_2fa as boolean | undefined,
            require_2fa_user_type: require_2fa_user_type as string | undefined,
          })
        }
        if (contact !== undefined) await billing.update(p, contact)
        return siteAnswer(p)
      },
    )
  }
}
