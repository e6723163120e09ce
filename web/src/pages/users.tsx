import type { Me } from '../api'
import { href, type Route } from '../router'
import { PageTitle } from '../ui'
import './accounts.css'
import { GroupsTab } from './users/groups-tab'
import { PermissionsTab } from './users/permissions-tab'
import { UsersTab } from './users/users-tab'

/** Users, groups and their folder permissions: site administrators only (the API refuses anyone else). */
export function UsersPage({ route, me }: { route: Route; me: Me }) {
  const tab = route.rest === 'permissions' || route.rest === 'groups' ? route.rest : 'users'
  if (!me.site_admin) {
    return (
      <section>
        <PageTitle>Users</PageTitle>
        <p class="muted">Only site administrators manage users and folder permissions.</p>
      </section>
    )
  }
  return (
    <section>
      <PageTitle>{{ users: 'Users', groups: 'Groups', permissions: 'Folder permissions' }[tab]}</PageTitle>
      <nav aria-label="Users and permissions">
        <ul class="tabs">
          <li>
            <a href={href('users')} aria-current={tab === 'users' ? 'page' : undefined}>
              Users
            </a>
          </li>
          <li>
            <a href={href('users', 'groups')} aria-current={tab === 'groups' ? 'page' : undefined}>
              Groups
            </a>
          </li>
          <li>
            <a href={href('users', 'permissions')} aria-current={tab === 'permissions' ? 'page' : undefined}>
              Folder permissions
            </a>
          </li>
        </ul>
      </nav>
      {tab === 'users' ? (
        <UsersTab me={me} />
      ) : tab === 'groups' ? (
        <GroupsTab />
      ) : (
        <PermissionsTab route={route} />
      )}
    </section>
  )
}
