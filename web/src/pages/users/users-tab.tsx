import { useState } from 'preact/hooks'
import type { Me } from '../../api'
import { PagedTable, useCursorPages } from '../../components/accounts-paging'
import { href } from '../../router'
import { ColumnHeads, formatDate, Notice } from '../../ui'
import { CreateUserForm, DeleteUserForm, EditUserForm } from './user-forms'
import type { User } from './user-types'

const PER_PAGE = 50

type Panel = { kind: 'none' } | { kind: 'create' } | { kind: 'edit' | 'delete'; user: User }

export function UsersTab({ me }: { me: Me }) {
  const [search, setSearch] = useState('')
  const [applied, setApplied] = useState('')
  const [panel, setPanel] = useState<Panel>({ kind: 'none' })
  const [notice, setNotice] = useState<string | null>(null)
  // Matches anywhere in the user name (filter_like is SQL LIKE, case-insensitive).
  const query = applied ? { 'filter_like[username]': `%${applied}%` } : {}
  const list = useCursorPages<User>('/users', query, PER_PAGE)

  function done(message: string) {
    setPanel({ kind: 'none' })
    setNotice(message)
    list.reload()
  }

  return (
    <div>
      <div class="actions toolbar">
        <form
          class="form-row"
          onSubmit={(e) => {
            e.preventDefault()
            setApplied(search.trim())
          }}
        >
          <label>
            Find users by username
            <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
          </label>
          <button type="submit" class="secondary">
            Find
          </button>
        </form>
        <button
          type="button"
          onClick={() => {
            setNotice(null)
            setPanel({ kind: 'create' })
          }}
        >
          New user
        </button>
      </div>
      {notice ? <Notice>{notice}</Notice> : null}
      {panel.kind === 'create' ? (
        <CreateUserForm
          onDone={(u) => done(`User ${u.username} created.`)}
          onCancel={() => setPanel({ kind: 'none' })}
        />
      ) : null}
      {panel.kind === 'edit' ? (
        <EditUserForm
          key={panel.user.id}
          user={panel.user}
          me={me}
          onDone={() => done(`User ${panel.user.username} saved.`)}
          onCancel={() => setPanel({ kind: 'none' })}
        />
      ) : null}
      {panel.kind === 'delete' ? (
        <DeleteUserForm
          key={panel.user.id}
          user={panel.user}
          onDone={() => done(`User ${panel.user.username} deleted.`)}
          onCancel={() => setPanel({ kind: 'none' })}
        />
      ) : null}
      <PagedTable list={list} label="Users" empty="No users match.">
        {(items) => (
          <table class="cards">
            <ColumnHeads columns={['Username', 'Name', 'Email', 'Role', 'Last sign-in', 'Actions']} />
            <tbody>
              {items.map((u) => (
                <tr key={u.id}>
                  <th scope="row">{u.username}</th>
                  <td>{u.name}</td>
                  <td>{u.email}</td>
                  <td>
                    {u.site_admin ? (
                      <span class="badge">Site admin</span>
                    ) : u.readonly_site_admin ? (
                      <span class="badge">Read-only admin</span>
                    ) : (
                      'User'
                    )}{' '}
                    {!u.self_managed ? <span class="badge">Shared/Bot</span> : null}{' '}
                    {u.disabled ? <span class="badge bad">Disabled</span> : null}
                  </td>
                  <td data-label="Last sign-in">
                    {u.last_login_at ? formatDate(u.last_login_at) : <span class="muted">never</span>}
                  </td>
                  <td>
                    <div class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Edit ${u.username}`}
                        onClick={() => {
                          setNotice(null)
                          setPanel({ kind: 'edit', user: u })
                        }}
                      >
                        Edit
                      </button>
                      <a
                        class="button secondary"
                        href={href('users', 'permissions', { user_id: String(u.id) })}
                        aria-label={`Folder permissions of ${u.username}`}
                      >
                        Permissions
                      </a>
                      <button
                        type="button"
                        class="danger"
                        disabled={u.id === me.id}
                        title={u.id === me.id ? 'You cannot delete yourself' : undefined}
                        aria-label={`Delete ${u.username}`}
                        onClick={() => {
                          setNotice(null)
                          setPanel({ kind: 'delete', user: u })
                        }}
                      >
                        Delete
                      </button>
                    </div>
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
