import { useState } from 'preact/hooks'
import { all, type Me } from '../api'
import type { Route } from '../router'
import { ErrorBox, Loading, PageTitle, useAsync } from '../ui'
import './accounts.css'

/** A catalog entry of GET /apps (the fields this page shows). */
interface App {
  name: string
  short_description: string | null
  extended_description: string | null
  documentation_links: Record<string, string>
  icon_url: string | null
  logo_thumbnail_url: string | null
  external_homepage_url: string | null
  marketing_youtube_url: string | null
  tutorial_youtube_url: string | null
  app_type: string
  featured: boolean
}

const TYPE_LABELS: Record<string, string> = {
  sdk: 'SDK',
  sso: 'Single sign-on',
  remote_server: 'Remote server',
  folder_behavior: 'Folder behavior',
  client_app: 'Client app',
  app_integration: 'Integration',
}

/**
 * Only pictures this server or the page itself holds are shown: the interface never makes a
 * request outside the server, so a catalog icon hosted elsewhere becomes the app's initial.
 */
export function localImage(url: string | null): string | null {
  if (!url) return null
  if (url.startsWith('data:image/')) return url
  try {
    const u = new URL(url, location.href)
    return u.origin === location.origin ? u.href : null
  } catch {
    return null
  }
}

function AppIcon({ app }: { app: App }) {
  const [failed, setFailed] = useState(false)
  const src = localImage(app.logo_thumbnail_url) ?? localImage(app.icon_url)
  if (src && !failed) return <img class="app-icon" src={src} alt="" onError={() => setFailed(true)} />
  return (
    <span class="app-icon app-initial" aria-hidden="true">
      {app.name.trim().charAt(0).toUpperCase()}
    </span>
  )
}

function linksOf(app: App): [string, string][] {
  const links: [string, string][] = Object.entries(app.documentation_links ?? {})
  if (app.external_homepage_url) links.unshift(['homepage', app.external_homepage_url])
  if (app.tutorial_youtube_url) links.push(['tutorial video', app.tutorial_youtube_url])
  if (app.marketing_youtube_url) links.push(['video', app.marketing_youtube_url])
  return links
}

function AppCard({ app }: { app: App }) {
  return (
    <li class="app-card panel">
      <article aria-labelledby={`app-${slug(app.name)}`}>
        <header class="app-head">
          <AppIcon app={app} />
          <div>
            <h2 id={`app-${slug(app.name)}`}>{app.name}</h2>
            <span class="badge">{TYPE_LABELS[app.app_type] ?? app.app_type}</span>{' '}
            {app.featured ? <span class="badge featured">Featured</span> : null}
          </div>
        </header>
        {app.short_description ? <p>{app.short_description}</p> : null}
        {app.extended_description && app.extended_description !== app.short_description ? (
          <details>
            <summary>More about {app.name}</summary>
            <p>{app.extended_description}</p>
          </details>
        ) : null}
        {linksOf(app).length ? (
          <ul class="app-links" aria-label={`Links for ${app.name}`}>
            {linksOf(app).map(([label, url]) => (
              <li key={`${label} ${url}`}>
                <a href={url} rel="noopener noreferrer" target="_blank">
                  {label}
                </a>
              </li>
            ))}
          </ul>
        ) : null}
      </article>
    </li>
  )
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-')
}

export function AppsPage(_props: { route: Route; me: Me }) {
  const apps = useAsync(() => all<App>('/apps'), [])
  const [search, setSearch] = useState('')
  const [type, setType] = useState('')
  const words = search.toLowerCase().split(/\s+/).filter(Boolean)
  const shown = (apps.data ?? []).filter((a) => {
    if (type && a.app_type !== type) return false
    const text = `${a.name} ${a.short_description ?? ''} ${a.extended_description ?? ''}`.toLowerCase()
    return words.every((w) => text.includes(w))
  })
  // Featured apps first, then by name, as a catalog is read.
  shown.sort((a, b) => Number(b.featured) - Number(a.featured) || a.name.localeCompare(b.name))
  const types = [...new Set((apps.data ?? []).map((a) => a.app_type))]

  return (
    <section>
      <PageTitle>Apps</PageTitle>
      <p class="muted">Tools and integrations that work with Wharf's API.</p>
      <form class="form-row panel" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search apps
          <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">All types</option>
            {types.map((t) => (
              <option key={t} value={t}>
                {TYPE_LABELS[t] ?? t}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorBox error={apps.error} />
      {apps.loading ? <Loading /> : null}
      {apps.data ? (
        <p class="muted" role="status">
          {shown.length === apps.data.length
            ? `${shown.length} apps`
            : `${shown.length} of ${apps.data.length} apps match`}
        </p>
      ) : null}
      <ul class="app-grid">
        {shown.map((a) => (
          <AppCard key={a.name} app={a} />
        ))}
      </ul>
    </section>
  )
}
