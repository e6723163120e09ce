import { useState } from 'preact/hooks'
import { all, del, post } from '../../api'
import { PagedTable, useCursorPages } from '../../components/accounts-paging'
import { Field, useSubmit } from '../../components/forms'
import { href, navigate, type Route } from '../../router'
import { ColumnHeads, ErrorBox, Notice, useAsync } from '../../ui'
import { granteeOf, PERMISSIONS, type Permission, permissionLabel, type User } from './user-types'

const PER_PAGE = 50

/** Folder permissions, filtered by user and path (both kept in the address so they can be shared). */
export function PermissionsTab({ route }: { route: Route }) {
  const userId = route.params.get('user_id') ?? ''
  const path = route.params.get('path') ?? ''
  const users = useAsync(() => all<User>('/users'), [])
  const query = { user_id: userId || undefined, path: path || undefined }
  const list = useCursorPages<Permission>('/permissions', query, PER_PAGE)
  const [notice, setNotice] = useState<string | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [error, setError] = useState<unknown>(null)

  function filter(next: { user_id: string; path: string }) {
    const params: Record<string, string> = {}
    if (next.user_id) params['user_id'] = next.user_id
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
        key={userId}
        users={users.data ?? []}
        defaultUserId={userId}
        onGranted={(p) => {
          setNotice(
            `Granted ${permissionLabel(p.permission).toLowerCase()} on /${p.path} to ${granteeOf(p)}.`,
          )
          list.reload()
        }}
      />
      <ErrorBox error={users.error} />
      <FilterForm
        key={`${userId} ${path}`}
        users={users.data ?? []}
        userId={userId}
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
            <ColumnHeads columns={['Folder', 'User', 'Permission', 'Actions']} />
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

function userOptions(users: User[], empty: string) {
  return [
    <option key="" value="">
      {empty}
    </option>,
    ...users.map((u) => (
      <option key={u.id} value={String(u.id)}>
        {u.name ? `${u.username} (${u.name})` : u.username}
      </option>
    )),
  ]
}

function FilterForm({
  users,
  userId,
  path,
  onFilter,
}: {
  users: User[]
  userId: string
  path: string
  onFilter: (f: { user_id: string; path: string }) => void
}) {
  const [u, setU] = useState(userId)
  const [p, setP] = useState(path)
  return (
    <form
      class="form-row toolbar"
      aria-label="Filter permissions"
      onSubmit={(e) => {
        e.preventDefault()
        onFilter({ user_id: u, path: p })
      }}
    >
      <label>
        Show permissions of
        <select value={u} onChange={(e) => setU(e.currentTarget.value)}>
          {userOptions(users, 'Every user')}
        </select>
      </label>
      <Field label="That apply to path" value={p} placeholder="e.g. projects/2026" onValue={setP} />
      <button type="submit" class="secondary">
        Filter
      </button>
      {userId || path ? (
        <button type="button" class="secondary" onClick={() => onFilter({ user_id: '', path: '' })}>
          Show all
        </button>
      ) : null}
    </form>
  )
}

function GrantForm({
  users,
  defaultUserId,
  onGranted,
}: {
  users: User[]
  defaultUserId: string
  onGranted: (p: Permission) => void
}) {
  const [path, setPath] = useState('')
  const [userId, setUserId] = useState(defaultUserId)
  const [permission, setPermission] = useState('full')
  const { error, busy, submit } = useSubmit(async () => {
    const p = await post<Permission>('/permissions', {
      path: path.trim().replace(/^\/+|\/+$/g, ''),
      user_id: Number(userId),
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
          User
          <select value={userId} required onChange={(e) => setUserId(e.currentTarget.value)}>
            {userOptions(users, 'Choose a user')}
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
