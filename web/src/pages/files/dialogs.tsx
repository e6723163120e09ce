import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { del, encodePath, post } from '../../api'
import { Modal } from '../../components/modal'
import { ErrorBox } from '../../ui'

/** A File record of the API, as the listing uses it. */
export interface Entry {
  id: number
  path: string
  display_name: string
  type: 'file' | 'directory'
  size: number
  mtime: string | null
  mime_type: string | null
  md5: string | null
  /** The caller's letters there: r read, w write, d delete, l list. */
  permissions: string
}

export type Operation = 'rename' | 'move' | 'copy' | 'delete'

export const parentOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '')
export const joinPath = (folder: string, name: string) => (folder === '' ? name : `${folder}/${name}`)

/** `report.pdf` → `report copy.pdf`, beside the original. */
function copyName(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1)
  const dot = name.lastIndexOf('.')
  const copy = dot > 0 ? `${name.slice(0, dot)} copy${name.slice(dot)}` : `${name} copy`
  return joinPath(parentOf(path), copy)
}

/**
 * A modal dialog (focus stays inside, Escape closes it) for one
 * change to one file or folder. It stays open with the API's refusal in words if there is one.
 */
export function OperationDialog({
  op,
  entry,
  onClose,
  onDone,
}: {
  op: Operation
  entry: Entry
  onClose: () => void
  onDone: (message: string) => void
}) {
  const [value, setValue] = useState(() =>
    op === 'rename' ? entry.display_name : op === 'copy' ? copyName(entry.path) : entry.path,
  )
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  const kind = entry.type === 'directory' ? 'folder' : 'file'
  const name = entry.display_name
  const titles: Record<Operation, string> = {
    rename: `Rename ${name}`,
    move: `Move ${name}`,
    copy: `Copy ${name}`,
    delete: `Delete ${name}?`,
  }

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    const src = encodePath(entry.path)
    try {
      if (op === 'delete') {
        await del(`/files/${src}`, entry.type === 'directory' ? { recursive: true } : undefined)
        onDone(`Deleted ${entry.path}`)
      } else {
        const destination =
          op === 'rename'
            ? joinPath(parentOf(entry.path), value.trim())
            : value.trim().replace(/^\/+|\/+$/g, '')
        await post(`/file_actions/${op === 'copy' ? 'copy' : 'move'}/${src}`, { destination })
        onDone(
          `${op === 'copy' ? 'Copied' : op === 'rename' ? 'Renamed' : 'Moved'} ${entry.path} to ${destination}`,
        )
      }
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }

  let body: ComponentChildren
  if (op === 'delete') {
    body = (
      <p>
        {entry.type === 'directory'
          ? `The folder ${entry.path} and everything inside it will be deleted.`
          : `The file ${entry.path} will be deleted.`}
      </p>
    )
  } else {
    const label = op === 'rename' ? 'New name' : op === 'move' ? 'Move to (full path)' : 'Copy to (full path)'
    body = (
      <label>
        {label}
        <input name="destination" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>
    )
  }

  return (
    <Modal labelledBy="op-title" onClose={onClose}>
      <form onSubmit={submit}>
        <h2 id="op-title">{titles[op]}</h2>
        {body}
        {op !== 'delete' ? (
          <p class="muted">
            {op === 'rename'
              ? `The ${kind} stays in the same folder.`
              : 'Missing folders on the way are created.'}
          </p>
        ) : null}
        <ErrorBox error={error} />
        <div class="actions">
          <button type="submit" class={op === 'delete' ? 'danger' : ''} disabled={busy}>
            {op === 'delete' ? 'Delete' : op === 'copy' ? 'Copy' : op === 'move' ? 'Move' : 'Rename'}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  )
}
