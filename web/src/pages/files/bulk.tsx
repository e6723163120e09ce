import { useState } from 'preact/hooks'
import { del, describe, encodePath, post } from '../../api'
import { Modal } from '../../components/modal'
import { type Entry, joinPath } from './dialogs'

export type BulkOperation = 'move' | 'copy' | 'delete'

/**
 * What can be done to the selected entries at once. `onDownloadZip` downloads them all as one ZIP
 * file; without it, no such button is offered.
 */
export function BulkBar({
  entries,
  canWriteHere,
  canShare,
  onOperation,
  onShare,
  onClear,
  onDownloadZip,
}: {
  entries: Entry[]
  canWriteHere: boolean
  canShare: boolean
  onOperation: (op: BulkOperation) => void
  onShare: () => void
  onClear: () => void
  onDownloadZip?: () => void
}) {
  const all = (letter: string) => entries.every((e) => e.permissions.includes(letter))
  return (
    <section class="bulk-bar" aria-label="Selection">
      <p role="status">{entries.length} selected</p>
      <div class="actions">
        {all('r') && canShare ? (
          <button type="button" class="secondary" onClick={onShare}>
            Share selected
          </button>
        ) : null}
        {onDownloadZip && all('r') ? (
          <button type="button" class="secondary" onClick={onDownloadZip}>
            Download as ZIP
          </button>
        ) : null}
        {all('d') ? (
          <button type="button" class="secondary" onClick={() => onOperation('move')}>
            Move selected
          </button>
        ) : null}
        {all('r') && canWriteHere ? (
          <button type="button" class="secondary" onClick={() => onOperation('copy')}>
            Copy selected
          </button>
        ) : null}
        {all('d') ? (
          <button type="button" class="danger" onClick={() => onOperation('delete')}>
            Delete selected
          </button>
        ) : null}
        <button type="button" class="secondary" onClick={onClear}>
          Clear selection
        </button>
      </div>
    </section>
  )
}

/**
 * Moves, copies or deletes several entries, one after the other. Those the API refuses are listed
 * with its reason, and the dialog stays open with them; the others are done.
 */
export function BulkDialog({
  op,
  entries: chosen,
  folder,
  onClose,
  onDone,
}: {
  op: BulkOperation
  entries: Entry[]
  folder: string
  onClose: () => void
  onDone: (message: string, changed: boolean) => void
}) {
  // The entries chosen when it opened: the listing behind it refreshes as they are done.
  const [entries] = useState(chosen)
  const [destination, setDestination] = useState(folder)
  const [busy, setBusy] = useState(false)
  const [failures, setFailures] = useState<{ path: string; error: string }[]>([])
  const n = entries.length
  const things = `${n} ${n === 1 ? 'item' : 'items'}`
  const title = op === 'delete' ? `Delete ${things}?` : op === 'move' ? `Move ${things}` : `Copy ${things}`

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setFailures([])
    const to = destination.trim().replace(/^\/+|\/+$/g, '')
    const failed: { path: string; error: string }[] = []
    for (const entry of entries) {
      const src = encodePath(entry.path)
      try {
        if (op === 'delete')
          await del(`/files/${src}`, entry.type === 'directory' ? { recursive: true } : undefined)
        else await post(`/file_actions/${op}/${src}`, { destination: joinPath(to, entry.display_name) })
      } catch (err) {
        failed.push({ path: entry.path, error: describe(err) })
      }
    }
    setBusy(false)
    const done = n - failed.length
    const verb = op === 'delete' ? 'Deleted' : op === 'move' ? 'Moved' : 'Copied'
    const message = `${verb} ${done} of ${n}${op === 'delete' ? '' : ` to ${to || 'All files'}`}`
    if (failed.length) {
      setFailures(failed)
      if (done) onDone(message, false)
    } else onDone(message, true)
  }

  return (
    <Modal labelledBy="bulk-title" class="bulk-dialog" onClose={onClose}>
      <form onSubmit={submit}>
        <h2 id="bulk-title">{title}</h2>
        <ul class="share-paths">
          {entries.map((e) => (
            <li key={e.id}>{e.path}</li>
          ))}
        </ul>
        {op === 'delete' ? (
          <p>Folders are deleted with everything inside them.</p>
        ) : (
          <label>
            {op === 'move' ? 'Move into folder (full path)' : 'Copy into folder (full path)'}
            <input
              name="destination"
              value={destination}
              onInput={(e) => setDestination(e.currentTarget.value)}
            />
          </label>
        )}
        {failures.length ? (
          <div class="error" role="alert">
            <p>Not done:</p>
            <ul>
              {failures.map((f) => (
                <li key={f.path}>
                  {f.path}: {f.error}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
        <div class="actions">
          <button type="submit" class={op === 'delete' ? 'danger' : ''} disabled={busy}>
            {op === 'delete' ? 'Delete' : op === 'move' ? 'Move' : 'Copy'}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            {failures.length ? 'Close' : 'Cancel'}
          </button>
        </div>
      </form>
    </Modal>
  )
}
