import { useEffect, useRef, useState } from 'preact/hooks'
import { describe } from '../../api'
import { type UploadTarget, uploadFile } from './upload'

export interface UploadItem {
  id: number
  file: File
  /** Where the file goes. */
  path: string
  sent: number
  state: 'uploading' | 'done' | 'failed'
  error: unknown
}

const joinPath = (folder: string, name: string) => (folder === '' ? name : `${folder}/${name}`)

/**
 * The uploads of this visit to the Files page: `start` sends files into a folder, each with its
 * own progress; `onStored(folder)` says when one was stored, so the listing can refresh. `target`:
 * where the calls go (the user's own files unless told).
 */
export function useUploads(onStored: (folder: string) => void, target?: UploadTarget) {
  const [items, setItems] = useState<UploadItem[]>([])
  const seq = useRef(0)
  const aborts = useRef(new Map<number, () => void>())

  // Leaving or reloading the page would cut the uploads under way: the browser asks first.
  const busy = items.some((u) => u.state === 'uploading')
  useEffect(() => {
    if (!busy) return
    const warn = (e: BeforeUnloadEvent) => e.preventDefault()
    window.addEventListener('beforeunload', warn)
    return () => window.removeEventListener('beforeunload', warn)
  }, [busy])

  const update = (id: number, change: Partial<UploadItem>) =>
    setItems((list) => list.map((u) => (u.id === id ? { ...u, ...change } : u)))

  function run(item: UploadItem, folder: string) {
    const h = uploadFile(item.path, item.file, (sent) => update(item.id, { sent }), target)
    aborts.current.set(item.id, h.abort)
    h.done.then(
      () => {
        aborts.current.delete(item.id)
        update(item.id, { state: 'done', sent: item.file.size, error: null })
        onStored(folder)
      },
      (error) => {
        aborts.current.delete(item.id)
        update(item.id, { state: 'failed', error })
      },
    )
  }

  function start(folder: string, files: File[]) {
    const fresh = files.map(
      (file): UploadItem => ({
        id: ++seq.current,
        file,
        path: joinPath(folder, file.name),
        sent: 0,
        state: 'uploading',
        error: null,
      }),
    )
    setItems((list) => [...fresh, ...list])
    for (const item of fresh) run(item, folder)
  }

  function retry(item: UploadItem) {
    const again = { ...item, sent: 0, state: 'uploading' as const, error: null }
    setItems((list) => list.map((u) => (u.id === item.id ? again : u)))
    run(again, item.path.includes('/') ? item.path.slice(0, item.path.lastIndexOf('/')) : '')
  }

  function dismiss(item: UploadItem) {
    aborts.current.get(item.id)?.()
    setItems((list) => list.filter((u) => u.id !== item.id))
  }

  const clearFinished = () => setItems((list) => list.filter((u) => u.state !== 'done'))

  return { items, start, retry, dismiss, clearFinished }
}

const percent = (u: UploadItem) =>
  u.file.size === 0 ? (u.state === 'done' ? 100 : 0) : Math.floor((u.sent / u.file.size) * 100)

/** The list of uploads, each with its progress bar and what became of it. */
export function UploadList({ uploads }: { uploads: ReturnType<typeof useUploads> }) {
  const { items } = uploads
  if (items.length === 0) return null
  const finished = items.some((u) => u.state === 'done')
  return (
    <section class="panel uploads" aria-labelledby="uploads-title">
      <div class="uploads-head">
        <h2 id="uploads-title">Uploads</h2>
        {finished ? (
          <button type="button" class="secondary" onClick={uploads.clearFinished}>
            Clear finished
          </button>
        ) : null}
      </div>
      <ul>
        {items.map((u) => {
          const pct = u.state === 'done' ? 100 : percent(u)
          return (
            <li key={u.id} class={`upload upload-${u.state}`}>
              <div class="upload-line">
                <span class="upload-name">{u.path}</span>
                <span class="upload-status" aria-live="polite">
                  {u.state === 'done' ? 'Complete' : u.state === 'failed' ? 'Failed' : `${pct} %`}
                </span>
              </div>
              <progress max={100} value={pct} aria-label={`Upload progress of ${u.file.name}`}>
                {pct} %
              </progress>
              {u.state === 'failed' ? (
                <p class="error" role="alert">
                  {u.file.name}: {describe(u.error)}
                </p>
              ) : null}
              <div class="upload-actions">
                {u.state === 'failed' ? (
                  <button type="button" onClick={() => uploads.retry(u)} aria-label={`Retry ${u.file.name}`}>
                    Retry
                  </button>
                ) : null}
                <button
                  type="button"
                  class="secondary"
                  onClick={() => uploads.dismiss(u)}
                  aria-label={`${u.state === 'uploading' ? 'Cancel' : 'Dismiss'} ${u.file.name}`}
                >
                  {u.state === 'uploading' ? 'Cancel' : 'Dismiss'}
                </button>
              </div>
            </li>
          )
        })}
      </ul>
    </section>
  )
}
