import { type RawBuilder, type Selectable, sql } from 'kysely'
import type { WebhookNotificationsTable } from '../db/schema.js'
import type { ClaimShape, LeasedJobs, Param } from '../jobs/leased-jobs.js'
import { settingsFromRow, type WebhookSettings } from './listener-settings.js'
import { notHeldBack } from './webhook-ordering.js'

export type NotificationRow = Selectable<WebhookNotificationsTable>

/** The columns of a claimed notification that its delivery and log record use. */
const CLAIMED = [
  'id',
  'site_id',
  'message_id',
  'operation',
  'user_id',
  'username',
  'protocol',
  'path',
  'sourcepath',
  'folder',
  'attempts',
  'max_attempts',
  'forced',
  'behavior_id',
  'url',
  'sequence',
] as const
export type ClaimedRow = Pick<NotificationRow, (typeof CLAIMED)[number]> & {
  /**
   * The site's listener settings, read by the claim itself where the dialect can (one round trip
   * for both): null when the site has none; absent when the dispatcher must read them.
   */
  settings?: WebhookSettings | null
}

/** The webhook_settings columns a claim returns beside each row, where it can (settingsFromRow's). */
const SETTINGS = [
  'site_id',
  'url',
  'triggers',
  'enabled',
  'verification_token',
  'signing_secret',
  'updated_at',
] as const
const WITH_SETTINGS = {
  from: 'left join webhook_settings s on s.site_id = claimed.site_id',
  columns: SETTINGS.map((c) => `s.${c}`),
}

/**
 * Claimed rows from the driver's array form, in the order of CLAIMED (then SETTINGS where the
 * claim joined them): building the object here costs a fraction of what the driver's objects
 * cost, per row claimed. The settings are made once per site and claim.
 */
function claimedFromArrays(): (a: unknown[]) => ClaimedRow {
  const sites = new Map<number, WebhookSettings | null>()
  return (a) => {
    const row = claimedFromArray(a)
    if (a.length > CLAIMED.length) {
      let settings = sites.get(row.site_id)
      if (settings === undefined) {
        const s = CLAIMED.length
        settings =
          a[s] === null
            ? null
            : settingsFromRow({
                site_id: a[s] as number,
                url: a[s + 1] as string | null,
                triggers: a[s + 2] as string,
                enabled: a[s + 3] as number,
                verification_token: a[s + 4] as string,
                signing_secret: a[s + 5] as string,
                created_at: 0, // not read
                updated_at: a[s + 6] as number,
              })
        sites.set(row.site_id, settings)
      }
      row.settings = settings
    }
    return row
  }
}

function claimedFromArray(a: unknown[]): ClaimedRow {
  return {
    id: a[0] as number,
    site_id: a[1] as number,
    message_id: a[2] as string,
    operation: a[3] as string,
    user_id: a[4] as number | null,
    username: a[5] as string,
    protocol: a[6] as string,
    path: a[7] as string,
    sourcepath: a[8] as string,
    folder: a[9] as string,
    attempts: a[10] as number,
    max_attempts: a[11] as number,
    forced: a[12] as number,
    behavior_id: a[13] === null ? null : Number(a[13]),
    url: a[14] as string | null,
    sequence: a[15] === null ? null : Number(a[15]),
  }
}

/** Literals, not parameters: SQLite uses the partial indexes on pending rows only then. */
export const PENDING = sql<boolean>`state = 'pending'`
export const KIND = {
  first: sql<boolean>`state = 'pending' and attempts = 0`,
  retry: sql<boolean>`state = 'pending' and attempts > 0`,
}
export type Kind = keyof typeof KIND

/** Which notifications one claim takes: every site's, all but some sites', or one site's. */
interface By {
  exclude?: number[]
  site?: number
  /**
   * Per-path ordering: a notification is left while an older one of its key is pending with
   * fewer attempts than this (webhook-ordering.ts). 0: no ordering.
   */
  hold?: number
}

/**
 * The claim of due notifications of one kind (the partial index serves it). The usual claim, for
 * every site, runs many times a second under load: its statement is the same every time.
 */
function shapeOf(kind: Kind, by: By): ClaimShape {
  const exclude = by.exclude?.length ?? 0
  const site = by.site !== undefined
  const ordered = (by.hold ?? 0) > 0
  return {
    key: `${kind}:${exclude}:${site}:${ordered}`,
    due: (p: Param) => {
      let due: RawBuilder<unknown> = sql`${KIND[kind]} and next_attempt_at <= ${p('now')}`
      if (ordered) due = sql`${due} and ${notHeldBack(p('hold'))}`
      if (exclude > 0) {
        const ids = Array.from({ length: exclude }, (_, i) => p(`x${i}`))
        due = sql`${due} and site_id not in (${sql.join(ids)})`
      }
      if (site) due = sql`${due} and site_id = ${p('site')}`
      return due
    },
    orderBy: 'next_attempt_at, id',
    returning: CLAIMED,
    joined: WITH_SETTINGS,
  }
}

const USUAL = {
  first: shapeOf('first', {}),
  retry: shapeOf('retry', {}),
  orderedFirst: shapeOf('first', { hold: 1 }),
  orderedRetry: shapeOf('retry', { hold: 1 }),
}

/** Claims up to `limit` due notifications of one kind for this worker. */
export function claimNotifications(
  jobs: LeasedJobs<'webhook_notifications'>,
  kind: Kind,
  limit: number,
  by: By = {},
): Promise<ClaimedRow[]> {
  const hold = by.hold ?? 0
  if (by.site === undefined && !by.exclude?.length) {
    if (hold === 0) return jobs.claim(USUAL[kind], limit, {}, claimedFromArrays())
    const shape = kind === 'first' ? USUAL.orderedFirst : USUAL.orderedRetry
    return jobs.claim(shape, limit, { hold }, claimedFromArrays())
  }
  const values: Record<string, unknown> = { site: by.site, hold }
  for (const [i, id] of (by.exclude ?? []).entries()) values[`x${i}`] = id
  return jobs.claim(shapeOf(kind, by), limit, values, claimedFromArrays())
}
