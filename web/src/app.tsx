import { useEffect, useState } from 'preact/hooks'
import { get, logout, type Me, onSessionChange, sessionId } from './api'
import { ApiKeysPage } from './pages/api-keys'
import { AppsPage } from './pages/apps'
import { BannedAddressesPage } from './pages/banned-addresses'
import { BillingPage } from './pages/billing'
import { DeveloperPage } from './pages/developer'
import { FilesPage } from './pages/files'
import { HistoryPage } from './pages/history'
import { mustChangePassword, PasswordChangePage } from './pages/password-change'
import { SharesPage } from './pages/shares'
import { SignInPage } from './pages/sign-in'
import { TwoFactorPage } from './pages/two-factor'
import { UsersPage } from './pages/users'
import { WebhookLogsPage } from './pages/webhook-logs'
import { href, type Route, useRoute } from './router'
import { ErrorBox, Loading, PageTitle } from './ui'

interface NavItem {
  page: string
  label: string
  adminOnly?: boolean
  render: (props: { route: Route; me: Me }) => preact.JSX.Element
}

/** Every page of the interface, in the order of the navigation. */
export const PAGES: NavItem[] = [
  { page: 'files', label: 'Files', render: (p) => <FilesPage {...p} /> },
  { page: 'shares', label: 'Shares', render: (p) => <SharesPage {...p} /> },
  { page: 'history', label: 'History', render: (p) => <HistoryPage {...p} /> },
  { page: 'webhook-logs', label: 'Webhook logs', adminOnly: true, render: (p) => <WebhookLogsPage {...p} /> },
  { page: 'developer', label: 'Developer', adminOnly: true, render: (p) => <DeveloperPage {...p} /> },
  { page: 'api-keys', label: 'API keys', render: (p) => <ApiKeysPage {...p} /> },
  { page: 'billing', label: 'Billing', adminOnly: true, render: (p) => <BillingPage {...p} /> },
  { page: 'apps', label: 'Apps', render: (p) => <AppsPage {...p} /> },
  { page: 'two-factor', label: 'Two-factor sign-in', render: (p) => <TwoFactorPage {...p} /> },
  { page: 'users', label: 'Users', adminOnly: true, render: (p) => <UsersPage {...p} /> },
  {
    page: 'banned-addresses',
    label: 'Banned addresses',
    adminOnly: true,
    render: (p) => <BannedAddressesPage {...p} />,
  },
]

export function App() {
  const [signedIn, setSignedIn] = useState(() => sessionId() !== null)
  useEffect(
    () =>
      onSessionChange((on) => {
        // Every sign-in starts at Files: the address may still hold the page of whoever signed
        // out in this tab (a site-admin page, for a user who may not use it).
        if (on) history.replaceState(null, '', href('files'))
        setSignedIn(on)
      }),
    [],
  )
  return signedIn ? <Shell /> : <SignInPage />
}

function Shell() {
  const route = useRoute()
  const [me, setMe] = useState<Me | null>(null)
  // The session may only enrol a two-factor method until one is confirmed (GET /site says so).
  const [setupNeeded, setSetupNeeded] = useState<boolean | null>(null)
  // A read-only site admin's session: every page a site admin sees, and changes refused (403).
  const [readOnly, setReadOnly] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [menuOpen, setMenuOpen] = useState(false)
  useEffect(() => {
    get<Me>('/user').then(setMe, setError)
    get<{ session: { two_factor_setup_needed: boolean; read_only?: boolean } | null }>('/site').then(
      (site) => {
        setSetupNeeded(site.session?.two_factor_setup_needed === true)
        setReadOnly(site.session?.read_only === true)
      },
      setError,
    )
  }, [])
  useEffect(() => setMenuOpen(false), [route.page, route.rest])

  if (error) return <ErrorBox error={error} />
  if (!me || setupNeeded === null) return <Loading />
  if (mustChangePassword(me)) return <PasswordChangePage me={me} onChanged={setMe} />
  if (setupNeeded) {
    return (
      <div class="shell">
        <header class="top">
          <span class="brand">Wharf</span>
          <div class="who">
            <span>{me.name || me.username}</span>
            <button type="button" class="secondary" onClick={() => logout()}>
              Sign out
            </button>
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          <TwoFactorPage me={me} required onEnrolled={() => setSetupNeeded(false)} />
        </main>
      </div>
    )
  }
  // The pages see a read-only site admin as a site admin: they show what one sees, and the server
  // refuses the changes, whose error the page shows as any other.
  const viewer: Me = readOnly ? { ...me, site_admin: true } : me
  const visible = PAGES.filter((p) => !p.adminOnly || viewer.site_admin)
  const wanted = PAGES.find((p) => p.page === route.page)
  // A site-admin page reached by its address says why it shows nothing; an unknown one shows Files.
  const refused = wanted !== undefined && !visible.includes(wanted)
  const current = refused ? wanted : (visible.find((p) => p.page === route.page) ?? visible[0]!)
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('files')}>
          Wharf
        </a>
        <button
          type="button"
          class="menu-toggle secondary"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <nav id="nav" aria-label="Main" class={menuOpen ? 'open' : ''}>
          <ul>
            {visible.map((p) => (
              <li key={p.page}>
                <a href={href(p.page)} aria-current={p === current ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>{me.name || me.username}</span>
          <button type="button" class="secondary" onClick={() => logout()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {readOnly ? (
          <p class="notice" role="status">
            Read-only: you see what a site administrator sees, and cannot change anything (except your own
            password and two-factor sign-in).
          </p>
        ) : null}
        {refused ? (
          <section>
            <PageTitle>{current.label}</PageTitle>
            <p class="error" role="alert">
              Only site administrators can use this page.
            </p>
          </section>
        ) : (
          current.render({ route, me: viewer })
        )}
      </main>
    </div>
  )
}
