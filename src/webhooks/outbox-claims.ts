import { type RawBuilder, type Selectable, sql } from 'kysely'
import type { WebhookNotificationsTable } from '../db/schema.js'
import type { ClaimShape, LeasedJobs, Param } from '../jobs/leased-jobs.js'

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
] as const
export type ClaimedRow = Pick<NotificationRow, (typeof CLAIMED)[number]>

/**
 * A claimed row from better-sqlite3's array form (`raw`), in the order of CLAIMED: building the
 * object here costs a fraction of what the driver's objects cost, per row claimed.
 */
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
}

/**
 * The claim of due notifications of one kind (the partial index serves it). The usual claim, for
 * every site, runs many times a second under load: its statement is the same every time.
 */
function shapeOf(kind: Kind, by: By): ClaimShape {
  const exclude = by.exclude?.length ?? 0
  const site = by.site !== undefined
  return {
    key: `${kind}:${exclude}:${site}`,
    due: (p: Param) => {
      let due: RawBuilder<unknown> = sql`${KIND[kind]} and next_attempt_at <= ${p('now')}`
      if (exclude > 0) {
        const ids = Array.from({ length: exclude }, (_, i) => p(`x${i}`))
        due = sql`${due} and site_id not in (${sql.join(ids)})`
      }
      if (site) due = sql`${due} and site_id = ${p('site')}`
      return due
    },
    orderBy: 'next_attempt_at, id',
    returning: CLAIMED,
  }
}

const USUAL = { first: shapeOf('first', {}), retry: shapeOf('retry', {}) }

/** Claims up to `limit` due notifications of one kind for this worker. */
export function claimNotifications(
  jobs: LeasedJobs<'webhook_notifications'>,
  kind: Kind,
  limit: number,
  by: By = {},
): Promise<ClaimedRow[]> {
  if (by.site === undefined && !by.exclude?.length)
    return jobs.claim(USUAL[kind], limit, {}, claimedFromArray)
  const values: Record<string, unknown> = { site: by.site }
  for (const [i, id] of (by.exclude ?? []).entries()) values[`x${i}`] = id
  return jobs.claim(shapeOf(kind, by), limit, values, claimedFromArray)
}
