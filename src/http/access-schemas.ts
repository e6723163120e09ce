import { Type } from '@sinclair/typebox'
import { checked } from './field-checks.js'
import { DateTime, DateTimeText, Nullable } from './schemas.js'

/** The description of every `allowed_ips` field (the site's, a user's, a group's). */
export const ALLOWED_IPS =
  'IPv4 and IPv6 addresses and CIDR ranges, one a line; logins must come from inside every non-empty list of the site, the user and their groups; blank or null for any address'

/** An `allowed_ips` a request gives (the service checks each line: 422 on the field). */
export const AllowedIpsText = (extra = '') =>
  Type.String({
    maxLength: 65_536,
    pattern: '^[0-9A-Fa-f.:/\\s]*$',
    description: `${ALLOWED_IPS}${extra}`,
    ...checked('allowed-ips'),
  })

/** The description of a protocol right. */
export const RIGHT = (what: string) =>
  `May log in through ${what}; a user needs their own right and that of each of their groups`

/** The access fields of the User resource as it is shown. */
export const UserAccessJson = {
  ftp_permission: Type.Boolean({ description: RIGHT('FTP') }),
  sftp_permission: Type.Boolean({ description: RIGHT('SFTP') }),
  dav_permission: Type.Boolean({ description: RIGHT('WebDAV') }),
  restapi_permission: Type.Boolean({ description: RIGHT('the REST API and the web interface') }),
  allowed_ips: Nullable(Type.String({ description: ALLOWED_IPS })),
  authenticate_until: DateTime('When the user’s access ends; null for never'),
  billing_permission: Type.Boolean({
    description:
      "May read and change the site's billing contact (contact_name, phone, email of GET/PATCH /site)",
  }),
  readonly_site_admin: Type.Boolean({
    description:
      'Reads everything a site admin reads except billing; every session and API key of the user is read-only (site_admin wins)',
  }),
}

/** The same fields as a create or update takes them, each optional. */
export const UserAccessInput = {
  ftp_permission: Type.Optional(UserAccessJson.ftp_permission),
  sftp_permission: Type.Optional(UserAccessJson.sftp_permission),
  dav_permission: Type.Optional(UserAccessJson.dav_permission),
  restapi_permission: Type.Optional(UserAccessJson.restapi_permission),
  allowed_ips: Type.Optional(Nullable(AllowedIpsText())),
  authenticate_until: Type.Optional(
    Nullable(DateTimeText('When the user’s access ends; empty or null for never', { blank: true })),
  ),
  billing_permission: Type.Optional(UserAccessJson.billing_permission),
  readonly_site_admin: Type.Optional(UserAccessJson.readonly_site_admin),
}
