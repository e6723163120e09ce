import { ERRORS } from '../../api/error-factories.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import {
  ACTION_LIST,
  type BundleActionJson,
  type BundleDownloadJson,
  type BundleRegistrationJson,
  DOWNLOAD_LIST,
  REGISTRATION_LIST,
  renderAction,
  renderDownload,
  renderRegistration,
} from './bundle-visit-model.js'
import type { BundleVisitRepository, VisitScope } from './bundle-visit-repository.js'

/**
 * What share links' recipients did, for their owners: registrations, downloads and actions of the
 * caller's bundles (every bundle's, for site admins; `user_id` narrows).
 */
export class BundleRecordService {
  constructor(
    private readonly repo: BundleVisitRepository,
    private readonly secrets: SiteSecrets,
  ) {}

  async registrations(p: Principal, query: Record<string, unknown>): Promise<Page<BundleRegistrationJson>> {
    const scope = this.scope(p, query)
    const list = await readListRequest(this.secrets, p.siteId, REGISTRATION_LIST, query, bound(scope))
    return mapPage(await this.repo.registrationPage(scope, list), (r) => renderRegistration(r))
  }

  async downloads(p: Principal, query: Record<string, unknown>): Promise<Page<BundleDownloadJson>> {
    const scope = this.scope(p, query)
    const list = await readListRequest(this.secrets, p.siteId, DOWNLOAD_LIST, query, bound(scope))
    return mapPage(await this.repo.downloadPage(scope, list), renderDownload)
  }

  async actions(p: Principal, query: Record<string, unknown>): Promise<Page<BundleActionJson>> {
    const scope = this.scope(p, query)
    const list = await readListRequest(this.secrets, p.siteId, ACTION_LIST, query, bound(scope))
    return mapPage(await this.repo.actionPage(scope, list), renderAction)
  }

  private scope(p: Principal, query: Record<string, unknown>): VisitScope {
    const n = query['user_id'] as number | undefined
    let userId: number | undefined
    if (n === undefined) userId = isSiteAdmin(p) ? undefined : p.user!.id
    else if (n === 0) userId = p.user?.id
    else if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can name another user_id')
    } else userId = n
    return {
      siteId: p.siteId,
      userId,
      bundleId: query['bundle_id'] as number | undefined,
      registrationId: query['bundle_registration_id'] as number | undefined,
    }
  }
}

function bound(scope: VisitScope): Record<string, unknown> {
  return {
    user_id: scope.userId ?? 'all',
    bundle_id: scope.bundleId ?? null,
    bundle_registration_id: scope.registrationId ?? null,
  }
}
