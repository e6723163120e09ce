import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Static, type TLiteral, type TSchema, type TUnion, Type } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import { ConfigError } from '../settings.js'

/**
 * The integration catalog behind GET /apps: a JSON file shipped with Wharf, which operators may
 * replace or extend with APPS_FILE. It is read and checked once, at start-up: a bad file stops
 * Wharf with a message naming the entry and the field, instead of serving half a catalog.
 */

/** The spec's enumerations ("App" resource). */
export const APP_TYPES = ['sdk', 'sso', 'remote_server', 'folder_behavior', 'client_app', 'app_integration']
export const SSO_STRATEGY_TYPES = [
  'google',
  'auth0',
  'okta',
  'atlassian',
  'azure',
  'box',
  'dropbox',
  'slack',
  '_unused_ubuntu',
  'onelogin',
  'saml',
  'idaptive',
  'ldap',
  'scim',
]
export const REMOTE_SERVER_TYPES = [
  'ftp',
  'sftp',
  's3',
  'google_cloud_storage',
  'webdav',
  'wasabi',
  'backblaze_b2',
  'one_drive',
  'rackspace',
  'box',
  'dropbox',
  'google_drive',
  'azure',
  'sharepoint',
  's3_compatible',
  'azure_files',
  'files_agent',
]
export const FOLDER_BEHAVIOR_TYPES = [
  'webhook',
  'file_expiration',
  'auto_encrypt',
  'lock_subfolders',
  'storage_region',
  'serve_publicly',
  'create_user_folders',
  'remote_server_sync',
  'inbox',
  'append_timestamp',
  'limit_file_extensions',
  'limit_file_regex',
  'amazon_sns',
  'watermark',
  'remote_server_mount',
  'slack_webhook',
  'auto_decrypt',
  'override_upload_filename',
]

const OneOf = (values: string[]): TUnion<TLiteral<string>[]> => Type.Union(values.map((v) => Type.Literal(v)))
const Maybe = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]))
/** An absolute http(s) URL, or a path from the server's root (served as BASE_URL + path). */
const Link = Type.String({ maxLength: 2048, pattern: '^(https?://[^\\s]+|/(?!/)[^\\s]*)$' })
const TEXT_LIMITS: Record<string, number> = { short_description: 1000, extended_description: 20_000 }
const Text = (field: string) => Type.String({ maxLength: TEXT_LIMITS[field] })

/** One entry of a catalog file: `name` and `app_type` are required, the rest may be left out. */
export const AppEntry = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' }),
    app_type: OneOf(APP_TYPES),
    short_description: Maybe(Text('short_description')),
    extended_description: Maybe(Text('extended_description')),
    documentation_links: Type.Optional(Type.Record(Type.String(), Link)),
    icon_url: Maybe(Link),
    logo_url: Maybe(Link),
    logo_thumbnail_url: Maybe(Link),
    screenshot_list_urls: Type.Optional(Type.Array(Link)),
    sso_strategy_type: Maybe(OneOf(SSO_STRATEGY_TYPES)),
    remote_server_type: Maybe(OneOf(REMOTE_SERVER_TYPES)),
    folder_behavior_type: Maybe(OneOf(FOLDER_BEHAVIOR_TYPES)),
    external_homepage_url: Maybe(Link),
    marketing_youtube_url: Maybe(Link),
    tutorial_youtube_url: Maybe(Link),
    featured: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type AppEntry = Static<typeof AppEntry>

const CatalogFile = Type.Object(
  {
    extends: Type.Optional(Type.Literal('default')),
    apps: Type.Array(AppEntry),
  },
  { additionalProperties: false },
)
type CatalogFile = Static<typeof CatalogFile>

/** An App as the API shows it: every field present, links still as written in the file. */
export interface App {
  name: string
  extended_description: string | null
  short_description: string | null
  documentation_links: Record<string, string>
  icon_url: string | null
  logo_url: string | null
  screenshot_list_urls: string[]
  logo_thumbnail_url: string | null
  sso_strategy_type: string | null
  remote_server_type: string | null
  folder_behavior_type: string | null
  external_homepage_url: string | null
  marketing_youtube_url: string | null
  tutorial_youtube_url: string | null
  app_type: string
  featured: boolean
}

/** Beside this module in src/ and in every build (tsconfig.build.json copies the JSON files). */
export const DEFAULT_APPS_FILE = fileURLToPath(new URL('./default-apps.json', import.meta.url))

/**
 * The catalog Wharf serves: the default one, or what `appsFile` says. A file without `extends`
 * replaces the default catalog; with `"extends": "default"` its entries are added to it, an
 * entry named like a default one (ignoring case) taking its place.
 */
export function loadAppCatalog(appsFile?: string): App[] {
  const defaults = readCatalogFile(DEFAULT_APPS_FILE, 'the default app catalog')
  if (appsFile === undefined) return defaults.apps.map(complete)
  const own = readCatalogFile(appsFile, `APPS_FILE ${appsFile}`)
  if (own.extends !== 'default') return own.apps.map(complete)
  const replaced = new Set(own.apps.map((a) => a.name.toLowerCase()))
  return [...defaults.apps.filter((a) => !replaced.has(a.name.toLowerCase())), ...own.apps].map(complete)
}

function readCatalogFile(file: string, label: string): CatalogFile {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError([`${label} cannot be read: ${(err as Error).message}`])
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (err) {
    throw new ConfigError([`${label} is not valid JSON: ${(err as Error).message}`])
  }
  const problems = describeErrors(data, label)
  if (problems.length > 0) throw new ConfigError(problems)
  const catalog = data as CatalogFile
  const seen = new Set<string>()
  for (const [i, app] of catalog.apps.entries()) {
    const key = app.name.toLowerCase()
    // Names identify entries: paging keys on them, and "extends" replaces by them.
    if (seen.has(key)) problems.push(`${label}: apps[${i}] ("${app.name}"): name is used by an earlier entry`)
    seen.add(key)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return catalog
}

const ENUMS: Record<string, string[]> = {
  app_type: APP_TYPES,
  sso_strategy_type: SSO_STRATEGY_TYPES,
  remote_server_type: REMOTE_SERVER_TYPES,
  folder_behavior_type: FOLDER_BEHAVIOR_TYPES,
}
const LINK_FIELDS = new Set([
  'icon_url',
  'logo_url',
  'logo_thumbnail_url',
  'external_homepage_url',
  'marketing_youtube_url',
  'tutorial_youtube_url',
  'documentation_links',
  'screenshot_list_urls',
])

/** TypeBox's findings in words an operator can act on, one per entry and field. */
function describeErrors(data: unknown, label: string): string[] {
  const out: string[] = []
  const reported = new Set<string>()
  for (const e of Value.Errors(CatalogFile, data)) {
    const [, top, index, field, ...rest] = e.path.split('/')
    if (top !== 'apps' || index === undefined) {
      if (e.type === ValueErrorType.Object) out.push(`${label} must be a JSON object with an "apps" array`)
      else if (top === 'apps') out.push(`${label}: "apps" must be an array of apps`)
      else if (top === 'extends') out.push(`${label}: "extends" may only be "default"`)
      else if (e.type === ValueErrorType.ObjectAdditionalProperties)
        out.push(`${label}: unknown key "${top}" (expected "apps" and optionally "extends")`)
      else out.push(`${label}: ${e.path || 'the file'}: ${e.message}`)
      break
    }
    const entry = (data as { apps: unknown[] }).apps[Number(index)] as Record<string, unknown> | undefined
    const name = typeof entry?.['name'] === 'string' ? ` ("${entry['name']}")` : ''
    const where = `${label}: apps[${index}]${name}`
    if (field === undefined) {
      out.push(`${where}: each app must be an object`)
      continue
    }
    const id = `${index}/${field}`
    if (reported.has(id)) continue
    reported.add(id)
    const got = e.value === undefined ? '' : ` (got ${JSON.stringify(e.value)})`
    if (e.type === ValueErrorType.ObjectRequiredProperty) out.push(`${where}: ${field} is required`)
    else if (e.type === ValueErrorType.ObjectAdditionalProperties)
      out.push(`${where}: ${field} is not a field of App`)
    else if (ENUMS[field]) out.push(`${where}: ${field} must be one of ${ENUMS[field].join(', ')}${got}`)
    else if (field === 'featured') out.push(`${where}: featured must be true or false${got}`)
    else if (field === 'name') out.push(`${where}: name must be text of 1 to 255 characters, not blank${got}`)
    else if (field === 'documentation_links' && rest.length === 0)
      out.push(`${where}: documentation_links must be an object of named links${got}`)
    else if (field === 'screenshot_list_urls' && rest.length === 0)
      out.push(`${where}: screenshot_list_urls must be an array of links${got}`)
    else if (LINK_FIELDS.has(field)) {
      const at = rest.length ? `${field}.${rest.join('.')}` : field
      out.push(`${where}: ${at} must be an http(s) URL or a path starting with /${got}`)
    } else
      out.push(
        `${where}: ${field} must be text (or null) of at most ${TEXT_LIMITS[field] ?? 0} characters${got}`,
      )
  }
  return out
}

function complete(a: AppEntry): App {
  return {
    name: a.name,
    extended_description: a.extended_description ?? null,
    short_description: a.short_description ?? null,
    documentation_links: a.documentation_links ?? {},
    icon_url: a.icon_url ?? null,
    logo_url: a.logo_url ?? null,
    screenshot_list_urls: a.screenshot_list_urls ?? [],
    logo_thumbnail_url: a.logo_thumbnail_url ?? null,
    sso_strategy_type: a.sso_strategy_type ?? null,
    remote_server_type: a.remote_server_type ?? null,
    folder_behavior_type: a.folder_behavior_type ?? null,
    external_homepage_url: a.external_homepage_url ?? null,
    marketing_youtube_url: a.marketing_youtube_url ?? null,
    tutorial_youtube_url: a.tutorial_youtube_url ?? null,
    app_type: a.app_type,
    featured: a.featured ?? false,
  }
}
