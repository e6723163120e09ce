import { useState } from 'preact/hooks'
import { all, del, post } from '../../api'
import { PagedTable, useCursorPages } from '../../components/accounts-paging'
import { Field, useSubmit } from '../../components/forms'
import { ColumnHeads, ErrorBox, Notice, useAsync } from '../../ui'
import { useAccessFields } from './access-fields'
import type { User } from './user-types'

const PER_PAGE = 50

/** A group as GET /groups gives it (the fields this tab shows). */
interface Group {
  id: number
  name: string
  notes: string | null
  usernames: string
  admin_ids: string
}

/** Groups and their members: create with members, delete after confirming. */
export function GroupsTab() {
  const users = useAsync(() => all<User>('/users'), [])
  const list = useCursorPages<Group>('/groups', {}, PER_PAGE)
  const [notice, setNotice] = useState<string | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [error, setError] = useState<unknown>(null)

  async function remove(g: Group) {
    setError(null)
    try {
      await del(`/groups/${g.id}`)
      setConfirming(null)
      setNotice(`Group ${g.name} deleted, with its folder permissions.`)
      list.reload()
    } catch (err) {
      setError(err)
    }
  }

  const nameOf = (id: string) => users.data?.find((u) => String(u.id) === id)?.username ?? `#${id}`
  return (
    <div>
      <CreateForm
        users={users.data ?? []}
        onCreated={(g) => {
          setNotice(`Group ${g.name} created.`)
          list.reload()
        }}
      />
      <ErrorBox error={users.error} />
      {notice ? <Notice>{notice}</Notice> : null}
      <p class="muted">
        Grant a group folder permissions with the API (<code>POST /permissions</code> with{' '}
        <code>group_id</code>): every member has them.
      </p>
      <PagedTable list={list} label="Groups" empty="No groups yet." error={error ?? list.error}>
        {(items) => (
          <table class="cards">
            <ColumnHeads columns={['Group', 'Members', 'Administrators', 'Actions']} />
            <tbody>
              {items.map((g) => (
                <tr key={g.id}>
                  <td>{g.name}</td>
                  <td>{g.usernames.split(',').filter(Boolean).join(', ') || '—'}</td>
                  <td>{g.admin_ids.split(',').filter(Boolean).map(nameOf).join(', ') || '—'}</td>
                  <td>
                    {confirming === g.id ? (
                      <div class="row-actions">
                        <button type="button" class="danger" onClick={() => remove(g)}>
                          Confirm delete
                        </button>
                        <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </div>
                    ) : (
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Delete group ${g.name}`}
                        onClick={() => setConfirming(g.id)}
                      >
                        Delete
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

function CreateForm({ users, onCreated }: { users: User[]; onCreated: (g: Group) => void }) {
  const [name, setName] = useState('')
  const [members, setMembers] = useState<string[]>([])
  const access = useAccessFields(null, false, true)
  const { error, busy, submit } = useSubmit(async () => {
    const g = await post<Group>('/groups', { ...access.body, name: name.trim(), user_ids: members.join(',') })
    setName('')
    setMembers([])
    onCreated(g)
  })
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="new-group-title">
      <h2 id="new-group-title">New group</h2>
      <div class="form-row fit-row">
        <Field label="Group name" required value={name} onValue={setName} />
        <label>
          Members
          <select
            multiple
            onChange={(e) => setMembers([...e.currentTarget.selectedOptions].map((o) => o.value))}
          >
            {users.map((u) => (
              <option key={u.id} value={String(u.id)} selected={members.includes(String(u.id))}>
                {u.username}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create group'}
        </button>
      </div>
      {access.fields}
      <ErrorBox error={error} />
    </form>
  )
}
