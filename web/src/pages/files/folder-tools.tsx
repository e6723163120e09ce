import { useState } from 'preact/hooks'
import { encodePath, post } from '../../api'
import { Field, useSubmit } from '../../components/forms'
import { href } from '../../router'
import { ErrorBox } from '../../ui'
import { joinPath } from './dialogs'

/** Where the folder is: each folder above it, a link. */
export function Breadcrumbs({ folder }: { folder: string }) {
  const segs = folder.split('/').filter((s) => s !== '')
  return (
    <nav aria-label="Breadcrumb" class="breadcrumbs">
      <ol>
        <li>
          <a href={href('files')} aria-current={segs.length === 0 ? 'page' : undefined}>
            All files
          </a>
        </li>
        {segs.map((s, i) => (
          <li key={i}>
            <a
              href={href('files', segs.slice(0, i + 1).join('/'))}
              aria-current={i === segs.length - 1 ? 'page' : undefined}
            >
              {s}
            </a>
          </li>
        ))}
      </ol>
    </nav>
  )
}

/** Creates a folder inside the one shown. */
export function NewFolder({ folder, onCreated }: { folder: string; onCreated: (path: string) => void }) {
  const [name, setName] = useState('')
  const { error, busy, submit } = useSubmit(async () => {
    const path = joinPath(folder, name.trim())
    await post(`/folders/${encodePath(path)}`, {})
    setName('')
    onCreated(path)
  })
  return (
    <form class="form-row new-folder" onSubmit={submit}>
      <Field label="New folder name" name="folder" required value={name} onValue={setName} />
      <button type="submit" disabled={busy}>
        Create folder
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

/**
 * Where files are dropped (several at once) or chosen with the file input, which is how keyboard
 * users upload.
 */
export function DropZone({ folderName, onFiles }: { folderName: string; onFiles: (files: File[]) => void }) {
  const [over, setOver] = useState(false)
  return (
    <section
      aria-label="Upload files"
      class={`drop-zone${over ? ' over' : ''}`}
      data-testid="drop-zone"
      onDragEnter={(e) => {
        e.preventDefault()
        setOver(true)
      }}
      onDragOver={(e) => {
        e.preventDefault()
        if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy'
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault()
        setOver(false)
        const files = Array.from(e.dataTransfer?.files ?? [])
        if (files.length) onFiles(files)
      }}
    >
      <p>Drop files here to upload them to {folderName}, or</p>
      <label class="file-pick">
        Choose files to upload
        <input
          type="file"
          multiple
          onChange={(e) => {
            const files = Array.from(e.currentTarget.files ?? [])
            if (files.length) onFiles(files)
            e.currentTarget.value = ''
          }}
        />
      </label>
    </section>
  )
}
