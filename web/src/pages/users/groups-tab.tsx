import { useState } from 'preact/hooks'
import { all, del, patch, post } from '../../api'
import { PagedTable, useCursorPages } from '../../components/accounts-paging'
import { Field, useSubmit } from '../../components/forms'
import { href } from '../../router'
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
  user_ids: string
  admin_ids: string
  ftp_permission: boolean
  sftp_permission: boolean
  dav_permission: boolean
  restapi_permission: boolean
  allowed_ips: string | null
}

const idsOf = (list: string) => list.split(',').filter(Boolean)

/**
 * Groups and their members: create with members, edit the name, notes, members and the group's
 * administrators (who manage its members), see its folder permissions, delete after confirming.
 */
export function GroupsTab() {
  const users = useAsync(() => all<User>('/users'), [])
  const list = useCursorPages<Group>('/groups', {}, PER_PAGE)
  const [notice, setNotice] = useState<string | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [editing, setEditing] = useState<Group | null>(null)
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
      {editing ? (
        <EditForm
          key={editing.id}
          group={editing}
          users={users.data ?? []}
          onCancel={() => setEditing(null)}
          onSaved={(g) => {
            setEditing(null)
            setNotice(`Group ${g.name} saved.`)
            list.reload()
          }}
        />
      ) : null}
      <ErrorBox error={users.error} />
      {notice ? <Notice>{notice}</Notice> : null}
      <p class="muted">
        A group's folder permissions (granted on the Folder permissions tab) apply to every member.
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
                    <div class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Edit group ${g.name}`}
                        onClick={() => setEditing(g)}
                      >
                        Edit
                      </button>
                      <a
                        class="button secondary"
                        href={href('users', 'permissions', { group_id: String(g.id) })}
                        aria-label={`Folder permissions of group ${g.name}`}
                      >
                        Permissions
                      </a>
                    </div>
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
        <MembersSelect users={users} members={members} onMembers={setMembers} />
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create group'}
        </button>
      </div>
      {access.fields}
      <ErrorBox error={error} />
    </form>
  )
}

/** A group's name, notes, members and administrators (a subset of the members), saved at once. */
function EditForm({
  group,
  users,
  onCancel,
  onSaved,
}: {
  group: Group
  users: User[]
  onCancel: () => void
  onSaved: (g: Group) => void
}) {
  const [name, setName] = useState(group.name)
  const [notes, setNotes] = useState(group.notes ?? '')
  const [members, setMembers] = useState<string[]>(idsOf(group.user_ids))
  const [admins, setAdmins] = useState<string[]>(idsOf(group.admin_ids))
  const access = useAccessFields(group, false, true)
  const { error, busy, submit } = useSubmit(async () => {
    const saved = await patch<Group>(`/groups/${group.id}`, {
      ...access.body,
      name: name.trim(),
      notes,
      user_ids: members.join(','),
      admin_ids: admins.filter((a) => members.includes(a)).join(','),
    })
    onSaved(saved)
  })
  const memberUsers = users.filter((u) => members.includes(String(u.id)))
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="edit-group-title">
      <h2 id="edit-group-title">Edit group {group.name}</h2>
      <div class="form-row fit-row">
        <Field label="Group name" required value={name} onValue={setName} />
        <Field label="Notes" value={notes} onValue={setNotes} />
      </div>
      <div class="form-row fit-row">
        <MembersSelect users={users} members={members} onMembers={setMembers} />
        <fieldset>
          <legend>Group administrators</legend>
          {memberUsers.length === 0 ? <p class="muted">No members yet.</p> : null}
          {memberUsers.map((u) => (
            <label key={u.id} class="inline">
              <input
                type="checkbox"
                checked={admins.includes(String(u.id))}
                onChange={(e) => {
                  const id = String(u.id)
                  const on = e.currentTarget.checked
                  setAdmins((now) =>
                    on ? [...now.filter((a) => a !== id), id] : now.filter((a) => a !== id),
                  )
                }}
              />
              {u.username}
            </label>
          ))}
        </fieldset>
      </div>
      {access.fields}
      <div class="row-actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save group'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <ErrorBox error={error} />
    </form>
  )
}

/** The users of a group, chosen from every user of the site (their ids, as strings). */
function MembersSelect({
  users,
  members,
  onMembers,
}: {
  users: User[]
  members: string[]
  onMembers: (ids: string[]) => void
}) {
  return (
    <label>
      Members
      <select multiple onChange={(e) => onMembers([...e.currentTarget.selectedOptions].map((o) => o.value))}>
        {users.map((u) => (
          <option key={u.id} value={String(u.id)} selected={members.includes(String(u.id))}>
            {u.username}
          </option>
        ))}
      </select>
    </label>
  )
}
