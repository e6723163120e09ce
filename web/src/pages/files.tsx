import { useRef, useState } from 'preact/hooks'
import { encodePath, get, type Me, page, post } from '../api'
import { Field, useSubmit } from '../components/forms'
import { href, type Route } from '../router'
import { ErrorBox, formatBytes, formatDate, Loading, Notice, PageTitle, useAsync } from '../ui'
import { type Entry, joinPath, type Operation, OperationDialog } from './files/dialogs'
import { UploadList, useUploads } from './files/uploads'
import './files.css'

type SortField = 'path' | 'size' | 'modified_at_datetime'
interface Sort {
  field: SortField
  dir: 'asc' | 'desc'
}

/**
 * Browsing, uploading, downloading and changing files: a client of the public file API, whose
 * `permissions` letters decide which controls are offered (and whose refusals are shown in words).
 */
export function FilesPage({ route, me }: { route: Route; me: Me }) {
  const folder = route.rest
  // Bumped when an upload into a folder is stored, so its listing refreshes.
  const [stored, setStored] = useState<{ folder: string; n: number }>({ folder: '', n: 0 })
  const uploads = useUploads((f) => setStored((s) => ({ folder: f, n: s.n + 1 })))
  const refresh = stored.folder.toLowerCase() === folder.toLowerCase() ? stored.n : 0
  return (
    <section>
      <PageTitle>Files</PageTitle>
      <Breadcrumbs folder={folder} />
      <Folder key={folder.toLowerCase()} folder={folder} me={me} refresh={refresh} uploads={uploads} />
    </section>
  )
}

function Breadcrumbs({ folder }: { folder: string }) {
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

/** The caller's letters on a folder: the root has no record, and only site admins may change it. */
async function folderPermissions(folder: string, me: Me): Promise<string> {
  if (folder === '') return me.site_admin ? 'rwdl' : 'l'
  try {
    const f = await get<Entry>(`/file_actions/metadata/${encodePath(folder)}`)
    return f.permissions
  } catch {
    return ''
  }
}

function Folder({
  folder,
  me,
  refresh,
  uploads,
}: {
  folder: string
  me: Me
  refresh: number
  uploads: ReturnType<typeof useUploads>
}) {
  const [sort, setSort] = useState<Sort>({ field: 'path', dir: 'asc' })
  const [search, setSearch] = useState('')
  const [searchInput, setSearchInput] = useState('')
  const [more, setMore] = useState<{ items: Entry[]; next: string | null } | null>(null)
  const [moreError, setMoreError] = useState<unknown>(null)
  const [op, setOp] = useState<{ op: Operation; entry: Entry } | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const [changed, setChanged] = useState(0)
  const [actionError, setActionError] = useState<unknown>(null)

  const listPath = folder === '' ? '/folders' : `/folders/${encodePath(folder)}`
  const query = { [`sort_by[${sort.field}]`]: sort.dir, search, per_page: 100 }
  const perms = useAsync(() => folderPermissions(folder, me), [folder, me.id, changed])
  const list = useAsync(() => {
    setMore(null)
    setMoreError(null)
    return page<Entry>(listPath, query)
  }, [listPath, sort.field, sort.dir, search, refresh, changed])

  const listData = useRef(list.data)
  listData.current = list.data
  const [loadingMore, setLoadingMore] = useState(false)
  const letters = perms.data ?? ''
  const canWrite = letters.includes('w')
  const items = [...(list.data?.items ?? []), ...(more?.items ?? [])]
  const next = more ? more.next : (list.data?.next ?? null)

  async function loadMore() {
    if (!next || loadingMore) return
    setMoreError(null)
    setLoadingMore(true)
    const from = list.data
    try {
      const p = await page<Entry>(listPath, { ...query, cursor: next })
      // A page of a listing since sorted or reloaded otherwise would not belong here.
      if (from === listData.current)
        setMore((m) => ({ items: [...(m?.items ?? []), ...p.items], next: p.next }))
    } catch (err) {
      setMoreError(err)
    } finally {
      setLoadingMore(false)
    }
  }

  function sortBy(field: SortField) {
    setSort((s) =>
      s.field === field ? { field, dir: s.dir === 'asc' ? 'desc' : 'asc' } : { field, dir: 'asc' },
    )
  }

  async function download(e: Entry) {
    setNotice(null)
    setActionError(null)
    try {
      const f = await get<Entry & { download_uri: string }>(`/files/${encodePath(e.path)}`)
      const a = document.createElement('a')
      a.href = f.download_uri
      a.download = e.display_name
      document.body.append(a)
      a.click()
      a.remove()
    } catch (err) {
      setActionError(err)
    }
  }
  const folderName = folder === '' ? 'All files' : folder.slice(folder.lastIndexOf('/') + 1)

  return (
    <>
      <div class="files-toolbar">
        <form
          class="form-row"
          aria-label="Search"
          onSubmit={(e) => {
            e.preventDefault()
            setSearch(searchInput.trim())
          }}
        >
          <label>
            Search in this folder
            <input
              type="search"
              name="search"
              value={searchInput}
              onInput={(e) => setSearchInput(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="secondary">
            Search
          </button>
          {search ? (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setSearch('')
                setSearchInput('')
              }}
            >
              Clear search
            </button>
          ) : null}
        </form>
        {canWrite ? (
          <NewFolder
            folder={folder}
            onCreated={(path) => {
              setNotice(`Created folder ${path}`)
              setChanged((n) => n + 1)
            }}
          />
        ) : null}
      </div>

      {notice ? <Notice>{notice}</Notice> : null}
      <ErrorBox error={actionError} />

      {canWrite ? (
        <DropZone folderName={folderName} onFiles={(files) => uploads.start(folder, files)} />
      ) : perms.loading ? null : (
        <p class="muted">You can look at this folder but not change it.</p>
      )}
      <UploadList uploads={uploads} />

      {list.error ? <ErrorBox error={list.error} /> : null}
      {list.loading && !list.data ? <Loading /> : null}
      {list.data ? (
        <>
          {search ? (
            <p class="muted" role="status">
              {items.length === 0
                ? `Nothing here matches “${search}”.`
                : `Results for “${search}” in ${folderName}`}
            </p>
          ) : items.length === 0 ? (
            <p class="muted">This folder is empty.</p>
          ) : null}
          {items.length > 0 ? (
            <div class="table-wrap">
              <table class="files-table">
                <caption class="visually-hidden">Contents of {folderName}</caption>
                <thead>
                  <tr>
                    <SortHeader label="Name" field="path" sort={sort} onSort={sortBy} />
                    <SortHeader label="Size" field="size" sort={sort} onSort={sortBy} num />
                    <SortHeader label="Modified" field="modified_at_datetime" sort={sort} onSort={sortBy} />
                    <th scope="col" class="col-type">
                      Type
                    </th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((e) => (
                    <Row
                      key={e.id}
                      entry={e}
                      shown={search ? relative(folder, e.path) : e.display_name}
                      canWriteHere={canWrite}
                      onOp={(o) => {
                        setNotice(null)
                        setActionError(null)
                        setOp({ op: o, entry: e })
                      }}
                      onDownload={() => download(e)}
                    />
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
          <ErrorBox error={moreError} />
          {next ? (
            <p>
              <button type="button" class="secondary" onClick={loadMore} disabled={loadingMore}>
                {loadingMore ? 'Loading…' : 'Load more'}
              </button>
            </p>
          ) : null}
        </>
      ) : null}

      {op ? (
        <OperationDialog
          op={op.op}
          entry={op.entry}
          onClose={() => setOp(null)}
          onDone={(message) => {
            setOp(null)
            setNotice(message)
            setChanged((n) => n + 1)
          }}
        />
      ) : null}
    </>
  )
}

/** A short type for the listing: `PDF file`, from the name's extension. */
function typeOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot > 0 && dot < name.length - 1 ? `${name.slice(dot + 1).toUpperCase()} file` : 'File'
}

const relative = (folder: string, path: string) => (folder === '' ? path : path.slice(folder.length + 1))

function SortHeader({
  label,
  field,
  sort,
  onSort,
  num,
}: {
  label: string
  field: SortField
  sort: Sort
  onSort: (f: SortField) => void
  num?: boolean
}) {
  const active = sort.field === field
  return (
    <th
      scope="col"
      class={num ? 'num' : undefined}
      aria-sort={active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : undefined}
    >
      <button type="button" class="sort" onClick={() => onSort(field)}>
        {label}
        <span aria-hidden="true">{active ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
        <span class="visually-hidden">
          {active ? `, sorted ${sort.dir === 'asc' ? 'ascending' : 'descending'}` : ''}
        </span>
      </button>
    </th>
  )
}

function Row({
  entry: e,
  shown,
  canWriteHere,
  onOp,
  onDownload,
}: {
  entry: Entry
  shown: string
  canWriteHere: boolean
  onOp: (op: Operation) => void
  onDownload: () => void
}) {
  const isDir = e.type === 'directory'
  const canDelete = e.permissions.includes('d')
  const canRead = e.permissions.includes('r')
  const name = e.display_name
  return (
    <tr>
      <td class="name">
        {isDir ? (
          <a href={href('files', e.path)}>
            <span aria-hidden="true" class="folder-icon" />
            {shown}
          </a>
        ) : (
          <span>{shown}</span>
        )}
      </td>
      <td class="num">{isDir ? '' : formatBytes(e.size)}</td>
      <td class="when">{formatDate(e.mtime)}</td>
      <td class="col-type">{isDir ? 'Folder' : typeOf(e.display_name)}</td>
      <td>
        <div class="row-actions">
          {!isDir && canRead ? (
            <button type="button" class="secondary" aria-label={`Download ${name}`} onClick={onDownload}>
              Download
            </button>
          ) : null}
          {canDelete ? (
            <button
              type="button"
              class="secondary"
              aria-label={`Rename ${name}`}
              onClick={() => onOp('rename')}
            >
              Rename
            </button>
          ) : null}
          {canDelete ? (
            <button type="button" class="secondary" aria-label={`Move ${name}`} onClick={() => onOp('move')}>
              Move
            </button>
          ) : null}
          {canRead && canWriteHere ? (
            <button type="button" class="secondary" aria-label={`Copy ${name}`} onClick={() => onOp('copy')}>
              Copy
            </button>
          ) : null}
          {canDelete ? (
            <button type="button" class="danger" aria-label={`Delete ${name}`} onClick={() => onOp('delete')}>
              Delete
            </button>
          ) : null}
        </div>
      </td>
    </tr>
  )
}

function NewFolder({ folder, onCreated }: { folder: string; onCreated: (path: string) => void }) {
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
function DropZone({ folderName, onFiles }: { folderName: string; onFiles: (files: File[]) => void }) {
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
