import { useEffect, useRef, useState } from 'preact/hooks'
import { type Me, patch, post } from '../../api'
import { withReauthentication } from '../../components/accounts-reauth'
import { ErrorBox } from '../../ui'
import type { User } from './user-types'

/** Text fields sent as null when left empty, so clearing a name really clears it. */
const orNull = (s: string) => (s.trim() === '' ? null : s.trim())

/** A form opened by a button takes the focus, so keyboard users land in it, not behind it. */
function useFocusFirst() {
  const ref = useRef<HTMLInputElement>(null)
  useEffect(() => ref.current?.focus(), [])
  return ref
}

export function CreateUserForm({ onDone, onCancel }: { onDone: (u: User) => void; onCancel: () => void }) {
  const [username, setUsername] = useState('')
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [siteAdmin, setSiteAdmin] = useState(false)
  const [shared, setShared] = useState(false)
  const first = useFocusFirst()
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const u = await post<User>('/users', {
        username: username.trim(),
        name: orNull(name),
        email: orNull(email),
        ...(password ? { password } : {}),
        site_admin: siteAdmin,
        self_managed: !shared,
      })
      onDone(u)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="new-user-title">
      <h2 id="new-user-title">New user</h2>
      <div class="form-row">
        <label>
          Username
          <input
            ref={first}
            required
            maxLength={128}
            autocomplete="off"
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </label>
        <label>
          Name
          <input maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Email
          <input
            type="email"
            maxLength={255}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            autocomplete="new-password"
            minLength={8}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
      </div>
      <label class="inline">
        <input type="checkbox" checked={siteAdmin} onChange={(e) => setSiteAdmin(e.currentTarget.checked)} />
        Site administrator
      </label>
      <label class="inline">
        <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} />
        Shared/Bot user (its password is managed by administrators)
      </label>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create user'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}

export function EditUserForm({
  user,
  me,
  onDone,
  onCancel,
}: {
  user: User
  me: Me
  onDone: (u: User) => void
  onCancel: () => void
}) {
  const self = user.id === me.id
  const [name, setName] = useState(user.name ?? '')
  const [email, setEmail] = useState(user.email ?? '')
  const [siteAdmin, setSiteAdmin] = useState(user.site_admin)
  const [disabled, setDisabled] = useState(user.disabled)
  const [shared, setShared] = useState(!user.self_managed)
  const [password, setPassword] = useState('')
  const [ownPassword, setOwnPassword] = useState('')
  const first = useFocusFirst()
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    const body = {
      name: orNull(name),
      email: orNull(email),
      site_admin: siteAdmin,
      disabled,
      self_managed: !shared,
      ...(password ? { password } : {}),
    }
    try {
      // A new password needs the administrator's own password again; other changes do not.
      if (password) await withReauthentication('PATCH', `/users/${user.id}`, body, ownPassword)
      else await patch<User>(`/users/${user.id}`, body)
      onDone({ ...user, ...body, name: body.name, email: body.email })
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="edit-user-title">
      <h2 id="edit-user-title">Edit {user.username}</h2>
      <div class="form-row">
        <label>
          Name
          <input ref={first} maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Email
          <input
            type="email"
            maxLength={255}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autocomplete="new-password"
            minLength={8}
            value={password}
            aria-describedby="new-password-hint"
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {password ? (
          <label>
            Your own password
            <input
              type="password"
              autocomplete="current-password"
              required
              value={ownPassword}
              onInput={(e) => setOwnPassword(e.currentTarget.value)}
            />
          </label>
        ) : null}
      </div>
      <p id="new-password-hint" class="muted">
        Leave the new password empty to keep the current one. Changing it signs {user.username} out everywhere
        and asks for your own password to confirm.
      </p>
      <label class="inline">
        <input
          type="checkbox"
          checked={siteAdmin}
          disabled={self}
          onChange={(e) => setSiteAdmin(e.currentTarget.checked)}
        />
        Site administrator{self ? ' (you cannot remove your own right)' : ''}
      </label>
      <label class="inline">
        <input
          type="checkbox"
          checked={disabled}
          disabled={self}
          onChange={(e) => setDisabled(e.currentTarget.checked)}
        />
        Disabled: cannot sign in or use API keys{self ? ' (you cannot disable yourself)' : ''}
      </label>
      <label class="inline">
        <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} />
        Shared/Bot user
      </label>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save changes'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}

export function DeleteUserForm({
  user,
  onDone,
  onCancel,
}: {
  user: User
  onDone: () => void
  onCancel: () => void
}) {
  const [ownPassword, setOwnPassword] = useState('')
  const first = useFocusFirst()
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await withReauthentication('DELETE', `/users/${user.id}`, { id: user.id }, ownPassword)
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="panel confirm" onSubmit={submit} aria-labelledby="delete-user-title">
      <h2 id="delete-user-title">Delete {user.username}?</h2>
      <p>
        The user, their sessions, API keys and folder permissions are removed. Their files stay. This cannot
        be undone.
      </p>
      <label>
        Your own password, to confirm
        <input
          ref={first}
          type="password"
          autocomplete="current-password"
          required
          value={ownPassword}
          onInput={(e) => setOwnPassword(e.currentTarget.value)}
        />
      </label>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" class="danger" disabled={busy}>
          {busy ? 'Deleting…' : `Delete ${user.username}`}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}
