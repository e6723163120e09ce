import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { pageInMemory } from '../../db/list-in-memory.js'
import type { Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import type { App } from './app-catalog.js'

/**
 * GET /apps: the catalog loaded at start-up, paged like every other list. Rows carry their sort
 * keys beside the App: names sort ignoring case (then exactly, names being unique), featured as 0/1.
 */
export const APP_LIST: ListSpec = {
  name: 'apps',
  idColumn: 'name',
  sort: {
    name: { column: 'name_sort', type: 'string' },
    app_type: { column: 'app_type', type: 'string' },
    featured: { column: 'featured', type: 'boolean' },
  },
  filter: {
    app_type: { column: 'app_type', type: 'string' },
    featured: { column: 'featured', type: 'boolean' },
  },
  defaultSort: { field: 'name', dir: 'asc' },
}

interface AppRow extends Record<string, unknown> {
  name: string
  name_sort: string
  app_type: string
  featured: number
  app: App
}

export class AppService {
  private readonly rows: AppRow[]

  constructor(
    apps: App[],
    private readonly secrets: SiteSecrets,
    private readonly baseUrl: () => string,
  ) {
    this.rows = apps.map((app) => ({
      name: app.name,
      name_sort: app.name.toLowerCase(),
      app_type: app.app_type,
      featured: app.featured ? 1 : 0,
      app,
    }))
  }

  /** Any authenticated caller may read the catalog; it holds nothing of the site's. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<App>> {
    const list = await readListRequest(this.secrets, p.siteId, APP_LIST, query)
    return mapPage(pageInMemory(this.rows, list.spec, list.query, list.secret), (r) => this.render(r.app))
  }

  /** Links written as paths (`/api/rest/v1/swagger_doc`) point at this server: BASE_URL + path. */
  private render(app: App): App {
    const base = this.baseUrl()
    const link = (u: string | null) => (u?.startsWith('/') ? base + u : u)
    return {
      ...app,
      documentation_links: Object.fromEntries(
        Object.entries(app.documentation_links).map(([k, v]) => [k, link(v) as string]),
      ),
      icon_url: link(app.icon_url),
      logo_url: link(app.logo_url),
      screenshot_list_urls: app.screenshot_list_urls.map((u) => link(u) as string),
      logo_thumbnail_url: link(app.logo_thumbnail_url),
      external_homepage_url: link(app.external_homepage_url),
      marketing_youtube_url: link(app.marketing_youtube_url),
      tutorial_youtube_url: link(app.tutorial_youtube_url),
    }
  }
}
