import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { ClaimedRow } from '../outbox-claims.js'
import { type EndpointRow, endpointsOf, keyOfNotification, syncEndpoints } from './endpoint-rows.js'

/**
 * The endpoints of a batch of claimed notifications, read in one statement per batch (so a pause
 * or a limit applies to every claim made after it). A site with a notification whose endpoint has
 * no row yet (made before endpoints were kept) has its endpoints brought in step first.
 */
export async function endpointsForBatch(
  db: Kysely<Database>,
  rows: readonly ClaimedRow[],
  now: number,
): Promise<(EndpointRow | undefined)[]> {
  if (rows.length === 0) return []
  const sites = [...new Set(rows.map((r) => r.site_id))]
  const keys = rows.map(keyOfNotification)
  // Only the batch's own endpoints: with many webhook behaviors a site has many more.
  const wanted = [...new Set(keys.filter((k) => k !== null))]
  let found = await endpointsOf(db, sites, wanted)
  const find = (r: ClaimedRow, i: number) => {
    const key = keys[i]
    return key === null || key === undefined ? undefined : found.get(`${r.site_id}:${key}`)
  }
  const missing = new Set(rows.filter((r, i) => keys[i] !== null && !find(r, i)).map((r) => r.site_id))
  if (missing.size > 0) {
    for (const site of missing) await syncEndpoints(db, site, now)
    found = await endpointsOf(db, sites, wanted)
  }
  return rows.map(find)
}

/** Whether notifications to this endpoint are held rather than sent (a behavior's test never is). */
export const holding = (e: EndpointRow | undefined, row: ClaimedRow) =>
  e !== undefined && (e.state === 'paused' || e.state === 'disabled') && row.operation !== 'Test'
