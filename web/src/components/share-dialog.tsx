import { useState } from 'preact/hooks'
import { patch, post } from '../api'
import { CopyButton, ErrorBox } from '../ui'
import { Modal } from './modal'

/** A Bundle record of the API (a share link), as the interface shows it. */
export interface Bundle {
  id: number
  code: string
  url: string
  description: string | null
  password_protected: boolean
  permissions: string
  require_registration: boolean
  expires_at: string | null
  max_uses: number | null
  created_at: string
  user_id: number | null
  username: string | null
  paths?: string[]
}

/** What recipients of a link may do, in the words the interface uses. */
export const SHARE_PERMISSIONS: { value: string; label: string }[] = [
  { value: 'read', label: 'Download' },
  { value: 'write', label: 'Upload only' },
  { value: 'read_write', label: 'Download and upload' },
  { value: 'preview_only', label: 'Preview only' },
]

export const permissionLabel = (p: string) => SHARE_PERMISSIONS.find((x) => x.value === p)?.label ?? p

/** An ISO time as a `datetime-local` input's value, in the browser's time zone. */
function localInput(iso: string | null): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  const off = d.getTimezoneOffset() * 60_000
  return new Date(d.getTime() - off).toISOString().slice(0, 16)
}

/**
 * Creates a share link of some paths, or changes one (`bundle`): what recipients may do, an
 * optional password, expiry, a limit of uses, registration and a description. Once created, the
 * link is shown with a copy button.
 */
export function ShareDialog({
  paths,
  bundle,
  initialPermissions = 'read',
  title,
  onClose,
  onSaved,
}: {
  paths: string[]
  bundle?: Bundle
  initialPermissions?: string
  title?: string
  onClose: () => void
  onSaved: (b: Bundle) => void
}) {
  const [permissions, setPermissions] = useState(bundle?.permissions ?? initialPermissions)
  const [password, setPassword] = useState('')
  const [removePassword, setRemovePassword] = useState(false)
  const [expires, setExpires] = useState(localInput(bundle?.expires_at ?? null))
  const [maxUses, setMaxUses] = useState(bundle?.max_uses ? String(bundle.max_uses) : '')
  const [registration, setRegistration] = useState(bundle?.require_registration ?? false)
  const [description, setDescription] = useState(bundle?.description ?? '')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const [created, setCreated] = useState<Bundle | null>(null)

  const what = paths.length === 1 ? paths[0]! : `${paths.length} items`
  const heading = title ?? (bundle ? `Edit share link of ${what}` : `Share ${what}`)

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    const body: Record<string, unknown> = {
      permissions,
      expires_at: expires ? new Date(expires).toISOString() : null,
      max_uses: maxUses ? Number(maxUses) : null,
      require_registration: registration,
      description: description.trim() || null,
    }
    if (password) body['password'] = password
    else if (bundle && removePassword) body['password'] = null
    try {
      if (bundle) {
        const b = await patch<Bundle>(`/bundles/${bundle.id}`, body)
        onSaved(b)
      } else {
        const b = await post<Bundle>('/bundles', { ...body, paths })
        setCreated(b)
        onSaved(b)
      }
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  if (created) {
    return (
      <Modal labelledBy="share-title" class="share-dialog" onClose={onClose}>
        <h2 id="share-title">Link to {what} created</h2>
        <label>
          Share link
          <input readOnly value={created.url} onFocus={(e) => e.currentTarget.select()} />
        </label>
        <p class="muted">
          {permissionLabel(created.permissions)}
          {created.password_protected ? ', with a password' : ''}
          {created.expires_at ? `, until ${new Date(created.expires_at).toLocaleString()}` : ''}
        </p>
        <div class="actions">
          <CopyButton text={created.url} label="Copy link" />
          <button type="button" onClick={onClose}>
            Done
          </button>
        </div>
      </Modal>
    )
  }

  return (
    <Modal labelledBy="share-title" class="share-dialog" onClose={onClose}>
      <form onSubmit={submit}>
        <h2 id="share-title">{heading}</h2>
        {paths.length > 1 ? (
          <ul class="share-paths">
            {paths.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        ) : null}
        <fieldset>
          <legend>Recipients may</legend>
          {SHARE_PERMISSIONS.map((p) => (
            <label key={p.value} class="inline">
              <input
                type="radio"
                name="permissions"
                value={p.value}
                checked={permissions === p.value}
                onChange={() => setPermissions(p.value)}
              />
              {p.label}
            </label>
          ))}
        </fieldset>
        <label>
          {bundle?.password_protected ? 'New password (optional)' : 'Password (optional)'}
          <input
            type="password"
            name="password"
            autocomplete="new-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {bundle?.password_protected ? (
          <label class="inline">
            <input
              type="checkbox"
              checked={removePassword}
              disabled={password !== ''}
              onChange={(e) => setRemovePassword(e.currentTarget.checked)}
            />
            Remove the password
          </label>
        ) : null}
        <div class="share-row">
          <label>
            Expires (optional)
            <input
              type="datetime-local"
              name="expires_at"
              value={expires}
              onInput={(e) => setExpires(e.currentTarget.value)}
            />
          </label>
          <label>
            Maximum uses (optional)
            <input
              type="number"
              name="max_uses"
              min={1}
              step={1}
              value={maxUses}
              onInput={(e) => setMaxUses(e.currentTarget.value)}
            />
          </label>
        </div>
        <label class="inline">
          <input
            type="checkbox"
            checked={registration}
            onChange={(e) => setRegistration(e.currentTarget.checked)}
          />
          Recipients give their name and e-mail address first
        </label>
        <label>
          Description shown to recipients (optional)
          <textarea
            name="description"
            rows={2}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </label>
        <ErrorBox error={error} />
        <div class="actions">
          <button type="submit" disabled={busy}>
            {bundle ? 'Save' : 'Create link'}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  )
}
