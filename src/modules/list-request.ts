import type { ListRequest, ListSpec } from '../api/list-spec.js'
import { listRequest } from '../db/list-cursor.js'
import type { SiteSecrets } from '../security/site-secrets.js'

/**
 * The start of every list method: the query checked against the endpoint's spec, with the site's
 * secret that signs (and checks) its cursors. The repository turns it into a page
 * (db/list-sql.ts `selectPage`), the service renders the page's records.
 */
export async function readListRequest(
  secrets: SiteSecrets,
  siteId: number,
  spec: ListSpec,
  query: Record<string, unknown>,
  /** Other parameters that shape the result (user_id …): a cursor is valid only with the same. */
  bound: Record<string, unknown> = {},
): Promise<ListRequest> {
  return listRequest(spec, query, await secrets.signingSecret(siteId), bound)
}
