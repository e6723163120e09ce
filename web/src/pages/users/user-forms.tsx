import { useState } from 'preact/hooks'
import { type Me, patch, post } from '../../api'
import { withReauthentication } from '../../components/accounts-reauth'
import { useFocusWhen } from '../../components/focus'
import { Checkbox, Field, PasswordField, SubmitOrCancel, useSubmit } from '../../components/forms'
import { ErrorBox } from '../../ui'
import { useAccessFields } from './access-fields'
import type { User } from './user-types'

/** Text fields sent as null when left empty, so clearing a name really clears it. */
const orNull = (s: string) => (s.trim() === '' ? null : s.trim())

/** A form opened by a button takes the focus with its first field. */
const useFocusFirst = () => useFocusWhen<HTMLInputElement>()

/** The name and email of a user, the same when creating one and when editing one. */
function NameAndEmail({
  name,
  email,
  setName,
  setEmail,
  nameRef,
}: {
  name: string
  email: string
  setName: (v: string) => void
  setEmail: (v: string) => void
  nameRef?: ReturnType<typeof useFocusFirst>
}) {
  return (
    <>
      <Field label="Name" inputRef={nameRef} maxLength={255} value={name} onValue={setName} />
      <Field label="Email" type="email" maxLength={255} value={email} onValue={setEmail} />
    </>
  )
}

/** The site admin's "choose a new password at the next sign-in" (the user's require_password_change). */
function MustChangePassword(props: { checked: boolean; onChecked: (v: boolean) => void }) {
  return <Checkbox label="Must change the password at the next sign-in" {...props} />
}

/** Whether the user must sign in with a code as well (`require_2fa`). */
function RequireTwoFactor({ value, onValue }: { value: string; onValue: (v: string) => void }) {
  return (
    <label>
      Two-factor sign-in
      <select name="require_2fa" value={value} onChange={(e) => onValue(e.currentTarget.value)}>
        <option value="use_system_setting">As the site requires</option>
        <option value="always_require">Always required</option>
        <option value="never_require">Never required</option>
      </select>
    </label>
  )
}

/** A site administrator who is also read-only stays a site administrator. */
const READ_ONLY_ADMIN = 'Read-only site administrator (sees what a site administrator sees, changes nothing)'

export function CreateUserForm({ onDone, onCancel }: { onDone: (u: User) => void; onCancel: () => void }) {
  const [username, setUsername] = useState('')
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [siteAdmin, setSiteAdmin] = useState(false)
  const [readOnlyAdmin, setReadOnlyAdmin] = useState(false)
  const [shared, setShared] = useState(false)
  const [mustChange, setMustChange] = useState(false)
  const [twoFactor, setTwoFactor] = useState('use_system_setting')
  const access = useAccessFields(null)
  const first = useFocusFirst()
  const { error, busy, submit } = useSubmit(async () => {
    const u = await post<User>('/users', {
      ...access.body,
      require_password_change: mustChange,
      require_2fa: twoFactor,
      username: username.trim(),
      name: orNull(name),
      email: orNull(email),
      ...(password ? { password } : {}),
      site_admin: siteAdmin,
      readonly_site_admin: readOnlyAdmin,
      self_managed: !shared,
    })
    onDone(u)
  })

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="new-user-title">
      <h2 id="new-user-title">New user</h2>
      <div class="form-row">
        <Field
          label="Username"
          inputRef={first}
          required
          maxLength={128}
          autocomplete="off"
          value={username}
          onValue={setUsername}
        />
        <NameAndEmail name={name} email={email} setName={setName} setEmail={setEmail} />
        <PasswordField label="Password" minLength={8} value={password} onValue={setPassword} />
      </div>
      <Checkbox label="Site administrator" checked={siteAdmin} onChecked={setSiteAdmin} />
      <Checkbox label={READ_ONLY_ADMIN} checked={readOnlyAdmin} onChecked={setReadOnlyAdmin} />
      <Checkbox
        label="Shared/Bot user (its password is managed by administrators)"
        checked={shared}
        onChecked={setShared}
      />
      <MustChangePassword checked={mustChange} onChecked={setMustChange} />
      <RequireTwoFactor value={twoFactor} onValue={setTwoFactor} />
      {access.fields}
      <ErrorBox error={error} />
      <SubmitOrCancel busy={busy} label="Create user" busyLabel="Creating…" onCancel={onCancel} />
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
  const [readOnlyAdmin, setReadOnlyAdmin] = useState(user.readonly_site_admin === true)
  const [disabled, setDisabled] = useState(user.disabled)
  const [shared, setShared] = useState(!user.self_managed)
  const [mustChange, setMustChange] = useState(user.require_password_change === true)
  const [twoFactor, setTwoFactor] = useState(user.require_2fa ?? 'use_system_setting')
  const [password, setPassword] = useState('')
  const [ownPassword, setOwnPassword] = useState('')
  const access = useAccessFields(user, self)
  const first = useFocusFirst()
  const { error, busy, submit } = useSubmit(async () => {
    const body = {
      ...access.body,
      name: orNull(name),
      email: orNull(email),
      site_admin: siteAdmin,
      readonly_site_admin: readOnlyAdmin,
      disabled,
      self_managed: !shared,
      require_password_change: mustChange,
      require_2fa: twoFactor,
      ...(password ? { password } : {}),
    }
    // A new password needs the administrator's own password again; other changes do not.
    if (password) await withReauthentication('PATCH', `/users/${user.id}`, body, ownPassword)
    else await patch<User>(`/users/${user.id}`, body)
    onDone({ ...user, ...body, name: body.name, email: body.email })
  })

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="edit-user-title">
      <h2 id="edit-user-title">Edit {user.username}</h2>
      <div class="form-row">
        <NameAndEmail name={name} email={email} setName={setName} setEmail={setEmail} nameRef={first} />
        <PasswordField
          label="New password"
          minLength={8}
          value={password}
          aria-describedby="new-password-hint"
          onValue={setPassword}
        />
        {password ? (
          <PasswordField
            label="Your own password"
            current
            required
            value={ownPassword}
            onValue={setOwnPassword}
          />
        ) : null}
      </div>
      <p id="new-password-hint" class="muted">
        Leave the new password empty to keep the current one. Changing it signs {user.username} out everywhere
        and asks for your own password to confirm.
      </p>
      <Checkbox
        label={`Site administrator${self ? ' (you cannot remove your own right)' : ''}`}
        checked={siteAdmin}
        disabled={self}
        onChecked={setSiteAdmin}
      />
      <Checkbox label={READ_ONLY_ADMIN} checked={readOnlyAdmin} onChecked={setReadOnlyAdmin} />
      <Checkbox
        label={`Disabled: cannot sign in or use API keys${self ? ' (you cannot disable yourself)' : ''}`}
        checked={disabled}
        disabled={self}
        onChecked={setDisabled}
      />
      <Checkbox label="Shared/Bot user" checked={shared} onChecked={setShared} />
      <MustChangePassword checked={mustChange} onChecked={setMustChange} />
      <RequireTwoFactor value={twoFactor} onValue={setTwoFactor} />
      {access.fields}
      <ErrorBox error={error} />
      <SubmitOrCancel busy={busy} label="Save changes" busyLabel="Saving…" onCancel={onCancel} />
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
  const { error, busy, submit } = useSubmit(async () => {
    await withReauthentication('DELETE', `/users/${user.id}`, { id: user.id }, ownPassword)
    onDone()
  })

  return (
    <form class="panel confirm" onSubmit={submit} aria-labelledby="delete-user-title">
      <h2 id="delete-user-title">Delete {user.username}?</h2>
      <p>
        The user, their sessions, API keys and folder permissions are removed. Their files stay. This cannot
        be undone.
      </p>
      <PasswordField
        label="Your own password, to confirm"
        inputRef={first}
        current
        required
        value={ownPassword}
        onValue={setOwnPassword}
      />
      <ErrorBox error={error} />
      <SubmitOrCancel
        busy={busy}
        label={`Delete ${user.username}`}
        busyLabel="Deleting…"
        danger
        onCancel={onCancel}
      />
    </form>
  )
}
