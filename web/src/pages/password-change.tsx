import { useState } from 'preact/hooks'
import { logout, type Me, request } from '../api'
import { PasswordField, useSubmit } from '../components/forms'
import { ErrorBox } from '../ui'

/** Whether the signed-in user must choose a new password before anything else. */
export function mustChangePassword(me: Me): boolean {
  return me.require_password_change === true || me.password_expired === true
}

/**
 * The only screen of a session whose user must change their password (an administrator asked
 * for it, or it has expired): the API refuses everything else until the change is made. The
 * change is the user's own `PATCH /users/{id}`, with the current password as reauthentication.
 */
export function PasswordChangePage({ me, onChanged }: { me: Me; onChanged: (me: Me) => void }) {
  const [current, setCurrent] = useState('')
  const [password, setPassword] = useState('')
  const [confirmation, setConfirmation] = useState('')
  const { error, busy, submit } = useSubmit(async () => {
    const a = await request<Me>('PATCH', `/users/${me.id}`, {
      body: { password, password_confirmation: confirmation },
      headers: { 'X-Service-Reauthentication': `password:${current}` },
    })
    onChanged(a.data)
  })

  return (
    <main class="sign-in">
      <form onSubmit={submit} aria-labelledby="password-change-title">
        <h1 id="password-change-title">Change your password</h1>
        <p>
          {me.password_expired
            ? `The password of ${me.username} has expired.`
            : `An administrator asks ${me.username} to choose a new password.`}{' '}
          Choose one to continue.
        </p>
        <PasswordField
          label="Current password"
          name="current"
          current
          required
          value={current}
          onValue={setCurrent}
        />
        <PasswordField label="New password" name="password" required value={password} onValue={setPassword} />
        <PasswordField
          label="New password again"
          name="password_confirmation"
          required
          value={confirmation}
          onValue={setConfirmation}
        />
        <ErrorBox error={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Changing…' : 'Change password'}
        </button>
        <button type="button" class="secondary" onClick={() => logout()}>
          Sign out
        </button>
      </form>
    </main>
  )
}
