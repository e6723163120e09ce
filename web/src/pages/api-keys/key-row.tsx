import { useState } from 'preact/hooks'
import { del, patch } from '../../api'
import { isoToLocalDate } from '../../components/admin-time'
import { ConfirmAction, Field, SubmitOrCancel, useSubmit } from '../../components/forms'
import { ErrorBox, formatDate } from '../../ui'
import { type ApiKey, expiryIso, formatExpiry, keyName, PermissionSetSelect } from './api-key-fields'

/** One key in the table: its fields, and Edit and Delete (after a confirmation). */
export function KeyRow({
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
  // The Delete button gives way to the question: keyboard focus goes to its safe answer.

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
        <td data-label="User">{owner}</td>
        <td data-label="Permission set">
          <code>{k.permission_set}</code>
        </td>
        <td data-label="Folder">{k.path ? <code>{k.path}</code> : <span class="muted">All</span>}</td>
        <td data-label="Expires">
          {k.expires_at ? formatExpiry(k.expires_at) : <span class="muted">Never</span>}
          {expired ? <span class="badge bad">expired</span> : null}
        </td>
        <td data-label="Last used">
          {k.last_use_at ? formatDate(k.last_use_at) : <span class="muted">Never</span>}
        </td>
        <td class="row-actions">
          {mode === 'confirm-delete' ? (
            <ConfirmAction
              question={<>Delete “{label}”?</>}
              yes="Yes, delete"
              busy={busy}
              onYes={remove}
              onKeep={() => setMode('view')}
            />
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
