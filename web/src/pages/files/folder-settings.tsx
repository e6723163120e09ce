import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { ApiError, all, del, encodePath, get, type Me, patch, post } from '../../api'
import { Checkbox, ConfirmAction, useSubmit } from '../../components/forms'
import { Modal } from '../../components/modal'
import { ErrorBox, Loading, Notice, useAsync } from '../../ui'
import {
  type Behavior,
  type Draft,
  fromDraft,
  type Setting,
  summary,
  TYPE_FORMS,
  TYPE_NAMES,
  toDraft,
  typeLabel,
} from './behavior-types'

const folderUrl = (folder: string) => `/behaviors/folders/${encodePath(folder)}`
const shownFolder = (path: string) => (path === '' ? 'All files' : `/${path}`)
/** An HTTP status, or a network failure's curl-style code, in words. */
const statusText = (status: number) => (status < 100 ? `network error ${status}` : `HTTP ${status}`)
const sameFolder = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * Whether the user may manage this folder's behaviors: site admins always; anyone else when the
 * server lists them (folder admins inside their folders), so the button is offered to those only.
 */
export function useMayManageBehaviors(folder: string, me: Me) {
  return useAsync(
    () =>
      me.site_admin
        ? Promise.resolve(true)
        : get(folderUrl(folder), { per_page: 1 }).then(
            () => true,
            () => false,
          ),
    [folder, me.id, me.site_admin],
  )
}

/**
 * The Folder settings dialog: the folder's own behaviors (add, edit, remove) and those inherited
 * from the folders above, each with the folder it is on.
 */
export function FolderSettingsDialog({ folder, onClose }: { folder: string; onClose: () => void }) {
  const [changed, setChanged] = useState(0)
  const [editing, setEditing] = useState<Behavior | 'new' | null>(null)
  const [removing, setRemoving] = useState<Behavior | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const list = useAsync(
    () => all<Behavior>(folderUrl(folder), { ancestor_behaviors: true }),
    [folder, changed],
  )
  const remove = useSubmit(async () => {
    if (!removing) return
    await del(`/behaviors/${removing.id}`)
    setNotice(`Removed “${removing.name || typeLabel(removing.behavior)}”`)
    setRemoving(null)
    setChanged((n) => n + 1)
  })
  const own = (list.data ?? []).filter((b) => sameFolder(b.path, folder))
  const inherited = (list.data ?? []).filter((b) => !sameFolder(b.path, folder))
  const title = folder === '' ? 'All files' : folder.slice(folder.lastIndexOf('/') + 1)

  return (
    <Modal labelledBy="fs-title" class="settings-dialog" onClose={onClose}>
      <h2 id="fs-title">Folder settings: {title}</h2>
      {editing ? (
        <BehaviorForm
          folder={folder}
          behavior={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(b, made) => {
            setEditing(null)
            setNotice(`${made ? 'Added' : 'Saved'} “${b.name || typeLabel(b.behavior)}”`)
            setChanged((n) => n + 1)
          }}
        />
      ) : (
        <>
          {notice ? <Notice>{notice}</Notice> : null}
          <ErrorBox error={list.error} />
          {list.loading && !list.data ? <Loading /> : null}
          {list.data ? (
            <>
              <h3>Settings of this folder</h3>
              {own.length === 0 ? <p class="muted">None.</p> : null}
              <ul class="behavior-list" aria-label="Settings of this folder">
                {own.map((b) => (
                  <BehaviorItem key={b.id} b={b}>
                    {removing?.id === b.id ? (
                      <>
                        <ConfirmAction
                          question={`Remove “${b.name || typeLabel(b.behavior)}”?`}
                          yes="Remove"
                          busy={remove.busy}
                          onYes={() => remove.submit(new Event('submit'))}
                          onKeep={() => setRemoving(null)}
                        />
                        <ErrorBox error={remove.error} />
                      </>
                    ) : (
                      <div class="actions">
                        <button type="button" class="secondary" onClick={() => setEditing(b)}>
                          Edit<span class="visually-hidden"> {b.name || typeLabel(b.behavior)}</span>
                        </button>
                        <button
                          type="button"
                          class="secondary"
                          onClick={() => {
                            setNotice(null)
                            setRemoving(b)
                          }}
                        >
                          Remove<span class="visually-hidden"> {b.name || typeLabel(b.behavior)}</span>
                        </button>
                      </div>
                    )}
                  </BehaviorItem>
                ))}
              </ul>
              <h3>Inherited from folders above</h3>
              {inherited.length === 0 ? <p class="muted">None.</p> : null}
              <ul class="behavior-list" aria-label="Inherited from folders above">
                {inherited.map((b) => (
                  <BehaviorItem key={b.id} b={b}>
                    <p class="muted">From {shownFolder(b.path)}</p>
                  </BehaviorItem>
                ))}
              </ul>
            </>
          ) : null}
          <div class="actions">
            <button
              type="button"
              onClick={() => {
                setNotice(null)
                setEditing('new')
              }}
            >
              Add a setting
            </button>
            <button type="button" class="secondary" onClick={onClose}>
              Close
            </button>
          </div>
        </>
      )}
    </Modal>
  )
}

function BehaviorItem({ b, children }: { b: Behavior; children: ComponentChildren }) {
  const flags = [
    b.recursive ? 'also in folders inside' : null,
    b.disable_parent_folder_behavior ? 'cancels inherited ones of its type' : null,
  ].filter((x) => x !== null)
  return (
    <li class="behavior-item">
      <p>
        <strong>{b.name || typeLabel(b.behavior)}</strong>
        {b.name ? <span class="muted"> · {typeLabel(b.behavior)}</span> : null}
      </p>
      <p class="behavior-value">{summary(b) || 'no settings'}</p>
      {b.description ? <p class="muted">{b.description}</p> : null}
      {flags.length ? <p class="muted">{flags.join(' · ')}</p> : null}
      {children}
    </li>
  )
}

/** The server's complaints about one field (`value.<name>` for a setting), said beside it. */
type FieldErrors = Record<string, string[]>

function FieldError({ id, errors }: { id: string; errors: string[] | undefined }) {
  if (!errors?.length) return null
  return (
    <p class="field-error" id={id}>
      {errors.join('; ')}
    </p>
  )
}

/** Attributes that tie an input to its error, when it has one. */
function invalid(id: string, errors: string[] | undefined) {
  return errors?.length ? { 'aria-invalid': true, 'aria-describedby': id } : {}
}

interface TestResult {
  success: boolean
  status: number
  message: string
  request_url: string
  response_size: number
  duration_ms: number
  response_body: string
}

/** Adds a behavior to the folder, or changes one of its own (its type never changes). */
function BehaviorForm({
  folder,
  behavior,
  onCancel,
  onSaved,
}: {
  folder: string
  behavior: Behavior | null
  onCancel: () => void
  onSaved: (b: Behavior, made: boolean) => void
}) {
  const editing = behavior !== null
  const [type, setType] = useState(behavior?.behavior ?? 'limit_file_extensions')
  const start = toDraft(type, behavior?.value ?? {})
  const [draft, setDraft] = useState<Draft>(start.draft)
  const [other, setOther] = useState(start.other)
  const [name, setName] = useState(behavior?.name ?? '')
  const [description, setDescription] = useState(behavior?.description ?? '')
  const [recursive, setRecursive] = useState(behavior?.recursive ?? false)
  const [disable, setDisable] = useState(behavior?.disable_parent_folder_behavior ?? false)
  const [fieldErrors, setFieldErrors] = useState<FieldErrors>({})
  const form = TYPE_FORMS[type]
  const showOther = other !== '' || !form

  function value(): Record<string, unknown> {
    try {
      return fromDraft(type, draft, other, editing)
    } catch (err) {
      setFieldErrors({ value: [`other settings ${(err as Error).message}`] })
      throw new Error('The other settings are not a JSON object.')
    }
  }

  const save = useSubmit(async () => {
    setFieldErrors({})
    const body = {
      value: value(),
      name: name.trim() === '' ? null : name.trim(),
      description: description.trim() === '' ? null : description,
      recursive,
      disable_parent_folder_behavior: disable,
    }
    try {
      const saved = behavior
        ? await patch<Behavior>(`/behaviors/${behavior.id}`, body)
        : await post<Behavior>('/behaviors', { path: folder, behavior: type, ...body })
      onSaved(saved, !editing)
    } catch (err) {
      if (err instanceof ApiError) setFieldErrors(err.fieldErrors)
      throw err
    }
  })

  // Errors said beside their fields; any other is said above the buttons.
  const known = new Set([
    'behavior',
    'name',
    'description',
    'recursive',
    'disable_parent_folder_behavior',
    'value',
    ...(form?.settings ?? []).map((s) => `value.${s.key}`),
  ])
  // A setting without a field of its own (`value.<name>`) is said beside the JSON of the others.
  const formKeys = new Set((form?.settings ?? []).map((s) => `value.${s.key}`))
  const ofOther = Object.entries(fieldErrors).filter(([k]) => k.startsWith('value.') && !formKeys.has(k))
  const errs = (key: string) =>
    key === 'value'
      ? [...(fieldErrors['value'] ?? []), ...ofOther.flatMap(([k, m]) => m.map((x) => `${k.slice(6)} ${x}`))]
      : fieldErrors[key]
  const unplaced = Object.entries(fieldErrors).filter(([k]) => !known.has(k) && !k.startsWith('value.'))
  // Every complaint is beside its field: the message above the buttons only points there.
  const placedOnly = Object.keys(fieldErrors).length > 0 && unplaced.length === 0

  return (
    <form class="behavior-form" onSubmit={save.submit} noValidate>
      <h3>{editing ? `Edit “${behavior.name || typeLabel(behavior.behavior)}”` : 'Add a setting'}</h3>
      <label for="fs-type">Setting type</label>
      <select
        id="fs-type"
        name="behavior"
        value={type}
        disabled={editing}
        {...invalid('fs-err-behavior', errs('behavior'))}
        onChange={(e) => {
          const t = e.currentTarget.value
          setType(t)
          const d = toDraft(t, {})
          setDraft(d.draft)
          setOther(d.other)
          setFieldErrors({})
        }}
      >
        {(TYPE_NAMES.includes(type) ? TYPE_NAMES : [type, ...TYPE_NAMES]).map((t) => (
          <option key={t} value={t}>
            {typeLabel(t)}
          </option>
        ))}
      </select>
      <FieldError id="fs-err-behavior" errors={errs('behavior')} />

      {(form?.settings ?? []).map((s) => (
        <SettingField
          key={`${type}.${s.key}`}
          s={s}
          value={draft[s.key]}
          editing={editing}
          errors={errs(`value.${s.key}`)}
          onValue={(v) => setDraft((d) => ({ ...d, [s.key]: v }))}
        />
      ))}
      {showOther ? (
        <label>
          {form ? 'Other settings (JSON)' : 'Settings (JSON)'}
          <textarea
            name="other"
            rows={4}
            value={other}
            {...invalid('fs-err-value', errs('value'))}
            onInput={(e) => setOther(e.currentTarget.value)}
          />
        </label>
      ) : null}
      <FieldError id="fs-err-value" errors={errs('value')} />

      <label>
        Name <span class="muted">(optional)</span>
        <input
          name="name"
          value={name}
          maxLength={255}
          {...invalid('fs-err-name', errs('name'))}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <FieldError id="fs-err-name" errors={errs('name')} />
      <label>
        Description <span class="muted">(optional)</span>
        <textarea
          name="description"
          rows={2}
          value={description}
          {...invalid('fs-err-description', errs('description'))}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
      </label>
      <FieldError id="fs-err-description" errors={errs('description')} />
      <Checkbox
        label="Also apply to every folder inside this one"
        checked={recursive}
        onChecked={setRecursive}
      />
      <Checkbox
        label="Cancel the settings of this type inherited from folders above"
        checked={disable}
        onChecked={setDisable}
      />

      {type === 'webhook' ? <SendTest value={() => fromDraft(type, draft, other, false)} /> : null}

      {save.error ? (
        <p class="error" role="alert">
          {placedOnly
            ? 'Not saved: see the marked fields.'
            : `${(save.error as Error).message}${unplaced.length ? `: ${unplaced.map(([k, m]) => `${k} ${m.join('; ')}`).join('; ')}` : ''}`}
        </p>
      ) : null}
      <div class="actions">
        <button type="submit" disabled={save.busy}>
          {save.busy ? 'Saving…' : editing ? 'Save' : 'Add'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}

/** One setting's input, by its kind, with the server's complaint about it beneath. */
function SettingField({
  s,
  value,
  editing,
  errors,
  onValue,
}: {
  s: Setting
  value: string | boolean | undefined
  editing: boolean
  errors: string[] | undefined
  onValue: (v: string | boolean) => void
}) {
  const errId = `fs-err-${s.key}`
  const hintId = `fs-hint-${s.key}`
  const text = typeof value === 'string' ? value : ''
  const describedBy = [s.hint ? hintId : '', errors?.length ? errId : ''].filter(Boolean).join(' ')
  const common = {
    id: `fs-${s.key}`,
    name: s.key,
    ...(describedBy ? { 'aria-describedby': describedBy } : {}),
    ...(errors?.length ? { 'aria-invalid': true } : {}),
  }
  if (s.kind === 'bool')
    return (
      <>
        <Checkbox label={s.label} checked={value === true} onChecked={onValue} />
        <FieldError id={errId} errors={errors} />
      </>
    )
  let input: ComponentChildren
  if (s.kind === 'select')
    input = (
      <select {...common} value={text || s.options?.[0]} onChange={(e) => onValue(e.currentTarget.value)}>
        {(s.options ?? []).map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    )
  else if (s.kind === 'lines' || s.kind === 'pairs')
    input = <textarea {...common} rows={3} value={text} onInput={(e) => onValue(e.currentTarget.value)} />
  else if (s.kind === 'secret')
    input = (
      <input
        {...common}
        type="password"
        autocomplete="new-password"
        placeholder={editing ? '(unchanged)' : undefined}
        value={text}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
    )
  else
    input = (
      <input
        {...common}
        type="text"
        inputMode={s.kind === 'number' ? 'numeric' : undefined}
        autocomplete="off"
        value={text}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
    )
  return (
    <>
      <label for={`fs-${s.key}`}>{s.label}</label>
      {input}
      {s.hint ? (
        <p class="field-hint muted" id={hintId}>
          {s.hint}
        </p>
      ) : null}
      <FieldError id={errId} errors={errors} />
    </>
  )
}

/** "Send test": one request to the webhook's first URL with the form's method, encoding, headers and body. */
function SendTest({ value }: { value: () => Record<string, unknown> }) {
  const [result, setResult] = useState<TestResult | null>(null)
  const send = useSubmit(async () => {
    setResult(null)
    const v = value()
    const urls = Array.isArray(v['urls']) ? (v['urls'] as string[]) : []
    setResult(
      await post<TestResult>('/behaviors/webhook/test', {
        url: urls[0] ?? '',
        method: v['method'] ?? 'POST',
        encoding: v['encoding'] ?? 'JSON',
        headers: v['headers'] ?? {},
        body: v['body'] ?? {},
      }),
    )
  })
  return (
    <div class="behavior-test">
      <button
        type="button"
        class="secondary"
        disabled={send.busy}
        onClick={() => send.submit(new Event('submit'))}
      >
        {send.busy ? 'Sending…' : 'Send test'}
      </button>
      <ErrorBox error={send.error} />
      {result ? (
        <p role="status">
          <span class={`badge ${result.success ? 'ok' : 'bad'}`}>
            {result.success ? 'Success' : 'Failure'}
          </span>{' '}
          <strong>{statusText(result.status)}</strong> {result.message} · {result.duration_ms} ms
        </p>
      ) : null}
    </div>
  )
}
