import { recordLink } from '../../security/signed-link.js'

/**
 * `results_url` of a ready export: a signed, expiring link to its CSV, usable without
 * credentials (refused like every signed link: 401 invalid-or-expired-code).
 */
const link = recordLink('export-results', 'export_files')

/** How long a `results_url` works from the response that handed it out. */
export const RESULTS_URL_SECONDS = 24 * 3600

export function exportResultsUrl(baseUrl: string, secret: string, siteId: number, id: number, nowMs: number) {
  return link.url(baseUrl, secret, siteId, id, Math.floor(nowMs / 1000) + RESULTS_URL_SECONDS)
}

export const checkExportResultsLink = link.check
