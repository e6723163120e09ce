import { useState } from 'preact/hooks'
import { type Me, post } from '../../api'
import { Field, useSubmit } from '../../components/forms'
import { CopyButton, ErrorBox } from '../../ui'
import { type ApiKey, expiryIso, keyName, PermissionSetSelect, type User } from './api-key-fields'

const SITE_WIDE = 'site-wide'
const SELF = 'self'

/** The plain key, shown once: the API never shows it again. */
export function NewKeyNotice({ apiKey, onDone }: { apiKey: ApiKey; onDone: () => void }) {
  return (
    <div class="panel new-key" role="status" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Key “{keyName(apiKey)}” created</h2>
      <p>
        <strong>Copy this key now: it will not be shown again.</strong> Wharf keeps only a fingerprint of it.
      </p>
      <div class="key-line">
        <code class="mono plain-key" data-testid="new-key">
          {apiKey.key}
        </code>
        <CopyButton text={apiKey.key!} label="Copy key" />
      </div>
      <button type="button" class="secondary" onClick={onDone}>
        I have copied it
      </button>
    </div>
  )
}

export function CreateKeyForm({
  me,
  users,
  onCreated,
}: {
  me: Me
  users: User[]
  onCreated: (k: ApiKey) => void
}) {
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [expires, setExpires] = useState('')
  const [permissionSet, setPermissionSet] = useState('full')
  const [path, setPath] = useState('')
  const [owner, setOwner] = useState(SELF)
  const siteWide = owner === SITE_WIDE
  const { error, busy, submit } = useSubmit(async () => {
    const body: Record<string, unknown> = { name: name.trim() }
    if (description.trim()) body['description'] = description.trim()
    if (expires) body['expires_at'] = expiryIso(expires)
    if (siteWide) body['site_wide'] = true
    else {
      body['permission_set'] = permissionSet
      if (path.trim()) body['path'] = path.trim()
      if (owner !== SELF) body['user_id'] = Number(owner)
    }
    const k = await post<ApiKey>('/api_keys', body)
    setName('')
    setDescription('')
    setExpires('')
    setPath('')
    setPermissionSet('full')
    onCreated(k)
  })

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create a key</h2>
      <div class="form-row">
        <Field label="Name" name="name" required maxLength={255} value={name} onValue={setName} />
        <Field
          label="Description (optional)"
          labelClass="grow"
          name="description"
          maxLength={4096}
          value={description}
          onValue={setDescription}
        />
        <Field
          label="Expires on (optional)"
          name="expires_at"
          type="date"
          value={expires}
          onValue={setExpires}
        />
      </div>
      <div class="form-row">
        {me.site_admin ? (
          <label>
            Owner
            <select name="owner" value={owner} onChange={(e) => setOwner(e.currentTarget.value)}>
              <option value={SELF}>Me ({me.username})</option>
              {users
                .filter((u) => u.id !== me.id)
                .map((u) => (
                  <option key={u.id} value={String(u.id)}>
                    {u.username}
                  </option>
                ))}
              <option value={SITE_WIDE}>The whole site (site-wide key, full permissions)</option>
            </select>
          </label>
        ) : null}
        <PermissionSetSelect
          name="permission_set"
          value={siteWide ? 'full' : permissionSet}
          disabled={siteWide}
          onValue={setPermissionSet}
        />
        <Field
          label="Only inside folder (optional)"
          labelClass="grow"
          name="path"
          placeholder="e.g. reports/2026"
          maxLength={5000}
          value={siteWide ? '' : path}
          disabled={siteWide}
          onValue={setPath}
        />
      </div>
      {siteWide ? (
        <p class="muted">
          A site-wide key belongs to no user, has full permissions and reaches every folder.
        </p>
      ) : permissionSet !== 'full' && permissionSet !== 'none' ? (
        <p class="muted" data-testid="permission-set-hint">
          An app key works with files and folders (list, upload, download, move, copy, delete, and their
          history) and with its own key, not with users, settings or other keys. Wharf has no share links yet.
        </p>
      ) : null}
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create key'}
      </button>
    </form>
  )
}
