import { useState } from 'preact/hooks'
import { all, del, post } from '../../api'
import { PagedTable, useCursorPages } from '../../components/accounts-paging'
import { Field, useSubmit } from '../../components/forms'
import { href, navigate, type Route } from '../../router'
import { ColumnHeads, ErrorBox, Notice, useAsync } from '../../ui'
import { granteeOf, PERMISSIONS, type Permission, permissionLabel, type User } from './user-types'

const PER_PAGE = 50

/** A group as GET /groups gives it (the fields this tab uses). */
interface Group {
  id: number
  name: string
}

/**
 * Whom a permission is for, as one select's value: `u:<user id>` or `g:<group id>` (blank:
 * nobody chosen, or every grantee in the filter).
 */
type Grantee = string

function granteeQuery(grantee: Grantee): { user_id?: string; group_id?: string } {
  if (grantee.startsWith('u:')) return { user_id: grantee.slice(2) }
  if (grantee.startsWith('g:')) return { group_id: grantee.slice(2) }
  return {}
}

/**
 * Folder permissions of users and groups, filtered by grantee and path (kept in the address so
 * they can be shared).
 */
export function PermissionsTab({ route }: { route: Route }) {
  const userId = route.params.get('user_id') ?? ''
  const groupId = route.params.get('group_id') ?? ''
  const grantee: Grantee = userId ? `u:${userId}` : groupId ? `g:${groupId}` : ''
  const path = route.params.get('path') ?? ''
  const users = useAsync(() => all<User>('/users'), [])
  const groups = useAsync(() => all<Group>('/groups'), [])
  const query = { user_id: userId || undefined, group_id: groupId || undefined, path: path || undefined }
  const list = useCursorPages<Permission>('/permissions', query, PER_PAGE)
  const [notice, setNotice] = useState<string | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [error, setError] = useState<unknown>(null)

  function filter(next: { grantee: Grantee; path: string }) {
    const params: Record<string, string> = { ...granteeQuery(next.grantee) }
    if (next.path.trim()) params['path'] = next.path.trim()
    navigate(href('users', 'permissions', params))
  }

  async function revoke(p: Permission) {
    setError(null)
    try {
      await del(`/permissions/${p.id}`)
      setConfirming(null)
      setNotice(`Revoked ${permissionLabel(p.permission).toLowerCase()} on /${p.path} from ${granteeOf(p)}.`)
      list.reload()
    } catch (err) {
      setError(err)
    }
  }

  return (
    <div>
      <GrantForm
        key={grantee}
        users={users.data ?? []}
        groups={groups.data ?? []}
        defaultGrantee={grantee}
        onGranted={(p) => {
          setNotice(
            `Granted ${permissionLabel(p.permission).toLowerCase()} on /${p.path} to ${granteeOf(p)}.`,
          )
          list.reload()
        }}
      />
      <ErrorBox error={users.error ?? groups.error} />
      <FilterForm
        key={`${grantee} ${path}`}
        users={users.data ?? []}
        groups={groups.data ?? []}
        grantee={grantee}
        path={path}
        onFilter={filter}
      />
      {notice ? <Notice>{notice}</Notice> : null}
      <PagedTable
        list={list}
        label="Permissions"
        empty="No folder permissions match."
        error={error ?? list.error}
      >
        {(items) => (
          <table class="cards">
            <ColumnHeads columns={['Folder', 'User or group', 'Permission', 'Actions']} />
            <tbody>
              {items.map((p) => (
                <tr key={p.id}>
                  <td class="mono">/{p.path}</td>
                  <td>{granteeOf(p)}</td>
                  <td>{permissionLabel(p.permission)}</td>
                  <td>
                    {confirming === p.id ? (
                      <div class="row-actions">
                        <button type="button" class="danger" onClick={() => revoke(p)}>
                          Confirm revoke
                        </button>
                        <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </div>
                    ) : (
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Revoke ${p.permission} on /${p.path} from ${granteeOf(p)}`}
                        onClick={() => setConfirming(p.id)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedTable>
    </div>
  )
}

function granteeOptions(users: User[], groups: Group[], empty: string) {
  return [
    <option key="" value="">
      {empty}
    </option>,
    <optgroup key="users" label="Users">
      {users.map((u) => (
        <option key={u.id} value={`u:${u.id}`}>
          {u.name ? `${u.username} (${u.name})` : u.username}
        </option>
      ))}
    </optgroup>,
    groups.length > 0 ? (
      <optgroup key="groups" label="Groups">
        {groups.map((g) => (
          <option key={g.id} value={`g:${g.id}`}>
            {`group ${g.name}`}
          </option>
        ))}
      </optgroup>
    ) : null,
  ]
}

function FilterForm({
  users,
  groups,
  grantee,
  path,
  onFilter,
}: {
  users: User[]
  groups: Group[]
  grantee: Grantee
  path: string
  onFilter: (f: { grantee: Grantee; path: string }) => void
}) {
  const [u, setU] = useState(grantee)
  const [p, setP] = useState(path)
  return (
    <form
      class="form-row toolbar fit-row"
      aria-label="Filter permissions"
      onSubmit={(e) => {
        e.preventDefault()
        onFilter({ grantee: u, path: p })
      }}
    >
      <label>
        Show permissions of
        <select value={u} onChange={(e) => setU(e.currentTarget.value)}>
          {granteeOptions(users, groups, 'Every user and group')}
        </select>
      </label>
      <Field label="That apply to path" value={p} placeholder="e.g. projects/2026" onValue={setP} />
      <button type="submit" class="secondary">
        Filter
      </button>
      {grantee || path ? (
        <button type="button" class="secondary" onClick={() => onFilter({ grantee: '', path: '' })}>
          Show all
        </button>
      ) : null}
    </form>
  )
}

function GrantForm({
  users,
  groups,
  defaultGrantee,
  onGranted,
}: {
  users: User[]
  groups: Group[]
  defaultGrantee: Grantee
  onGranted: (p: Permission) => void
}) {
  const [path, setPath] = useState('')
  const [grantee, setGrantee] = useState(defaultGrantee)
  const [permission, setPermission] = useState('full')
  const { error, busy, submit } = useSubmit(async () => {
    const to = granteeQuery(grantee)
    const p = await post<Permission>('/permissions', {
      path: path.trim().replace(/^\/+|\/+$/g, ''),
      ...(to.group_id ? { group_id: Number(to.group_id) } : { user_id: Number(to.user_id) }),
      permission,
    })
    setPath('')
    onGranted(p)
  })

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="grant-title">
      <h2 id="grant-title">Grant a folder permission</h2>
      <div class="form-row fit-row">
        <Field label="Folder path" required value={path} placeholder="e.g. projects/2026" onValue={setPath} />
        <label>
          User or group
          <select value={grantee} required onChange={(e) => setGrantee(e.currentTarget.value)}>
            {granteeOptions(users, groups, 'Choose a user or group')}
          </select>
        </label>
        <label>
          Permission
          <select value={permission} onChange={(e) => setPermission(e.currentTarget.value)}>
            {PERMISSIONS.map(([v, text]) => (
              <option key={v} value={v}>
                {text}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Granting…' : 'Grant'}
        </button>
      </div>
      <p class="muted">A permission covers the folder and everything inside it.</p>
      <ErrorBox error={error} />
    </form>
  )
}
