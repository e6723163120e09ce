import { useEffect, useRef, useState } from 'preact/hooks'
import { PERMISSION_SET_LABELS } from '../../../src/modules/auth/permission-sets'
import { all, del, type Me, patch, post } from '../api'
import { isoToLocalDate, localDateToIso } from '../components/admin-time'
import { Field, SubmitOrCancel, useSubmit } from '../components/forms'
import type { Route } from '../router'
import { CopyButton, ErrorBox, formatDate, Loading, Notice, PageTitle, useAsync } from '../ui'
import './admin.css'

/** The ApiKey resource as the API shows it (`key` only in the answer to the POST that made it). */
export interface ApiKey {
  id: number
  descriptive_label: string
  description: string | null
  created_at: string
  expires_at: string | null
  key?: string
  last_use_at: string | null
  name: string | null
  path: string | null
  permission_set: string
  user_id: number | null
}

interface User {
  id: number
  username: string
  name: string | null
}

/** The permission sets the API accepts, in words: the server's own list. */
export const PERMISSION_SETS: { value: string; label: string }[] = Object.entries(PERMISSION_SET_LABELS).map(
  ([value, label]) => ({ value, label }),
)

/** The API's time for an expiry date picked in the form, or an error the form shows. */
function expiryIso(date: string): string {
  const iso = localDateToIso(date)
  if (!iso) throw new Error('The expiry date is not a valid date.')
  return iso
}

/** The choice of a key's permission set, the same when creating a key and when editing one. */
function PermissionSetSelect({
  name,
  value,
  disabled,
  onValue,
}: {
  name?: string
  value: string
  disabled: boolean
  onValue: (value: string) => void
}) {
  return (
    <label>
      Permission set
      <select name={name} value={value} disabled={disabled} onChange={(e) => onValue(e.currentTarget.value)}>
        {PERMISSION_SETS.map((p) => (
          <option key={p.value} value={p.value}>
            {p.label}
          </option>
        ))}
      </select>
    </label>
  )
}

const SITE_WIDE = 'site-wide'
const SELF = 'self'

export function ApiKeysPage({ me }: { route: Route; me: Me }) {
  const keys = useAsync(() => all<ApiKey>('/api_keys', { 'sort_by[expires_at]': 'asc' }), [])
  // Site admins see every key and may make keys for others: they need the users' names.
  const users = useAsync<User[]>(
    () => (me.site_admin ? all<User>('/users') : Promise.resolve([me])),
    [me.id, me.site_admin],
  )
  const [created, setCreated] = useState<ApiKey | null>(null)
  const [message, setMessage] = useState<string | null>(null)

  const nameOf = (userId: number | null): string => {
    if (userId === null) return 'Site-wide (no user)'
    const u = users.data?.find((x) => x.id === userId)
    return u ? u.username : `user #${userId}`
  }

  return (
    <section class="admin-page">
      <PageTitle>API keys</PageTitle>
      <p class="muted">
        A key lets a program use Wharf's API as {me.site_admin ? 'its user' : 'you'}, without a password. Send
        it in the <code>X-ServiceAPI-Key</code> header.
      </p>

      {created?.key ? (
        <NewKeyNotice
          apiKey={created}
          onDone={() => {
            setCreated(null)
          }}
        />
      ) : null}
      {message ? <Notice>{message}</Notice> : null}

      <CreateKeyForm
        me={me}
        users={users.data ?? [me]}
        onCreated={(k) => {
          setMessage(null)
          setCreated(k)
          keys.reload()
        }}
      />

      <h2 id="keys-heading">{me.site_admin ? 'Keys of the site' : 'Your keys'}</h2>
      {keys.loading && !keys.data ? <Loading /> : null}
      <ErrorBox error={keys.error} />
      {keys.data && keys.data.length === 0 ? <p class="muted">No API keys yet.</p> : null}
      {keys.data && keys.data.length > 0 ? (
        <div class="table-wrap">
          <table aria-labelledby="keys-heading">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
                <th scope="col">User</th>
                <th scope="col">Permission set</th>
                <th scope="col">Folder</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <KeyRow
                  key={k.id}
                  apiKey={k}
                  owner={nameOf(k.user_id)}
                  onChanged={(what) => {
                    setCreated(null)
                    setMessage(what)
                    keys.reload()
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  )
}

/** An expiry set as a date (midnight here) shows as that date; any other time in full. */
function formatExpiry(iso: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  const midnight = d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0
  return midnight ? d.toLocaleDateString() : formatDate(iso)
}

function keyName(k: ApiKey): string {
  return k.name || k.descriptive_label
}

/** The plain key, shown once: the API never shows it again. */
function NewKeyNotice({ apiKey, onDone }: { apiKey: ApiKey; onDone: () => void }) {
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

function CreateKeyForm({ me, users, onCreated }: { me: Me; users: User[]; onCreated: (k: ApiKey) => void }) {
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
      ) : null}
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create key'}
      </button>
    </form>
  )
}

function KeyRow({
  apiKey: k,
  owner,
  onChanged,
}: {
  apiKey: ApiKey
  owner: string
  onChanged: (message: string) => void
}) {
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm-delete'>('view')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const label = keyName(k)
  const expired = k.expires_at !== null && new Date(k.expires_at).getTime() <= Date.now()
  const keepRef = useRef<HTMLButtonElement>(null)
  // The Delete button gives way to the question: keyboard focus goes to its safe answer.
  useEffect(() => {
    if (mode === 'confirm-delete') keepRef.current?.focus()
  }, [mode])

  async function remove() {
    setBusy(true)
    setError(null)
    try {
      await del(`/api_keys/${k.id}`)
      onChanged(`Key “${label}” deleted: programs using it are refused from now on.`)
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }

  return (
    <>
      <tr data-key-id={k.id}>
        <td>{label}</td>
        <td>{k.description ?? ''}</td>
        <td>{owner}</td>
        <td>
          <code>{k.permission_set}</code>
        </td>
        <td>{k.path ? <code>{k.path}</code> : <span class="muted">All</span>}</td>
        <td>
          {k.expires_at ? formatExpiry(k.expires_at) : <span class="muted">Never</span>}
          {expired ? <span class="badge bad">expired</span> : null}
        </td>
        <td>{k.last_use_at ? formatDate(k.last_use_at) : <span class="muted">Never</span>}</td>
        <td class="row-actions">
          {mode === 'confirm-delete' ? (
            <fieldset class="confirm">
              <legend>Delete “{label}”?</legend>
              <button type="button" class="danger" disabled={busy} onClick={remove}>
                Yes, delete
              </button>
              <button
                type="button"
                class="secondary"
                ref={keepRef}
                disabled={busy}
                onClick={() => setMode('view')}
              >
                Keep it
              </button>
            </fieldset>
          ) : (
            <>
              <button
                type="button"
                class="secondary"
                aria-expanded={mode === 'edit'}
                aria-label={`Edit ${label}`}
                onClick={() => {
                  setError(null)
                  setMode(mode === 'edit' ? 'view' : 'edit')
                }}
              >
                Edit
              </button>
              <button
                type="button"
                class="danger"
                aria-label={`Delete ${label}`}
                onClick={() => {
                  setError(null)
                  setMode('confirm-delete')
                }}
              >
                Delete
              </button>
            </>
          )}
        </td>
      </tr>
      {mode === 'edit' ? (
        <tr class="edit-row">
          <td colSpan={8}>
            <EditKeyForm
              apiKey={k}
              onCancel={() => setMode('view')}
              onSaved={() => {
                setMode('view')
                onChanged(`Key “${label}” saved.`)
              }}
            />
          </td>
        </tr>
      ) : null}
      {error && mode !== 'edit' ? (
        <tr>
          <td colSpan={8}>
            <ErrorBox error={error} />
          </td>
        </tr>
      ) : null}
    </>
  )
}

function EditKeyForm({
  apiKey: k,
  onCancel,
  onSaved,
}: {
  apiKey: ApiKey
  onCancel: () => void
  onSaved: () => void
}) {
  const [name, setName] = useState(k.name ?? '')
  const [description, setDescription] = useState(k.description ?? '')
  const [expires, setExpires] = useState(isoToLocalDate(k.expires_at))
  const [permissionSet, setPermissionSet] = useState(k.permission_set)
  const siteWide = k.user_id === null
  const id = `edit-${k.id}`
  const { error, busy, submit } = useSubmit(async () => {
    const body: Record<string, unknown> = {
      name: name.trim() || null,
      description: description.trim() || null,
      expires_at: expires ? expiryIso(expires) : null,
    }
    if (!siteWide) body['permission_set'] = permissionSet
    await patch<ApiKey>(`/api_keys/${k.id}`, body)
    onSaved()
  })

  return (
    <form onSubmit={submit} aria-labelledby={`${id}-title`} class="edit-key">
      <h3 id={`${id}-title`}>Edit “{keyName(k)}”</h3>
      <div class="form-row">
        <Field label="Name" maxLength={255} value={name} onValue={setName} />
        <Field
          label="Description"
          labelClass="grow"
          maxLength={4096}
          value={description}
          onValue={setDescription}
        />
        <Field label="Expires on (empty: never)" type="date" value={expires} onValue={setExpires} />
        <PermissionSetSelect value={permissionSet} disabled={siteWide} onValue={setPermissionSet} />
      </div>
      <p class="muted">
        The folder a key is restricted to cannot be changed: create a new key instead.
        {siteWide ? ' A site-wide key always has full permissions.' : ''}
      </p>
      <ErrorBox error={error} />
      <SubmitOrCancel busy={busy} label="Save" busyLabel="Saving…" onCancel={onCancel} />
    </form>
  )
}
