import { useEffect, useRef, useState } from 'preact/hooks'
import { encodePath, get, type Me, ownOrigin, page, post } from '../../api'
import { ShareDialog } from '../../components/share-dialog'
import { ErrorBox, Loading, Notice, useAsync } from '../../ui'
import { BulkBar, BulkDialog, type BulkOperation } from './bulk'
import { type Entry, type Operation, OperationDialog } from './dialogs'
import { Row, type RowAction, relative, type Sort, type SortField, SortHeader } from './file-table'
import { FolderSettingsDialog, useMayManageBehaviors } from './folder-settings'
import { DropZone, NewFolder } from './folder-tools'
import { PreviewDialog } from './preview'
import { UploadList, type useUploads } from './uploads'

interface ShareOf {
  paths: string[]
  permissions: string
  title?: string
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

/** One folder's listing, with its search, uploads and the operations its permissions allow. */
export function Folder({
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
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const anchor = useRef<string | null>(null)
  const [bulk, setBulk] = useState<BulkOperation | null>(null)
  const [share, setShare] = useState<ShareOf | null>(null)
  const [preview, setPreview] = useState<Entry | null>(null)
  const [settings, setSettings] = useState(false)
  const mayManage = useMayManageBehaviors(folder, me)

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
  const chosen = items.filter((e) => selected.has(e.path))
  // Another listing (sorted, searched, changed) keeps only the selected entries still in it.
  useEffect(() => {
    if (chosen.length !== selected.size) setSelected(new Set(chosen.map((e) => e.path)))
  }, [list.data, more])

  /** A checkbox clicked: toggles its entry; with Shift, every entry from the last one clicked. */
  function select(e: Entry, range: boolean) {
    const on = !selected.has(e.path)
    const paths = items.map((x) => x.path)
    const from = anchor.current ? paths.indexOf(anchor.current) : -1
    const to = paths.indexOf(e.path)
    const span = range && from >= 0 ? paths.slice(Math.min(from, to), Math.max(from, to) + 1) : [e.path]
    const nextSel = new Set(selected)
    for (const p of span) on ? nextSel.add(p) : nextSel.delete(p)
    anchor.current = e.path
    setSelected(nextSel)
  }
  const canShare = me.site_admin || me.attachments_permission === true
  const allSelected = items.length > 0 && chosen.length === items.length

  function act(e: Entry, a: RowAction) {
    setNotice(null)
    setActionError(null)
    if (a === 'download') download(e)
    else if (a === 'preview') setPreview(e)
    else if (a === 'share') setShare({ paths: [e.path], permissions: 'read' })
    else if (a === 'receive')
      setShare({ paths: [e.path], permissions: 'write', title: `Receive files into ${e.display_name}` })
    else setOp({ op: a, entry: e })
  }

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
  /** The selection as one ZIP: a link for this address, then the browser downloads it. */
  async function downloadZip(entries: Entry[]) {
    setNotice(null)
    setActionError(null)
    try {
      const z = await post<{ download_uri: string }>('/file_actions/zip_download', {
        paths: entries.map((e) => e.path),
      })
      const a = document.createElement('a')
      a.href = ownOrigin(z.download_uri)
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
        {mayManage.data ? (
          <button type="button" class="secondary folder-settings-button" onClick={() => setSettings(true)}>
            Folder settings
          </button>
        ) : null}
      </div>

      {notice ? <Notice>{notice}</Notice> : null}
      {chosen.length ? (
        <BulkBar
          entries={chosen}
          canWriteHere={canWrite}
          canShare={canShare}
          onOperation={(o) => {
            setNotice(null)
            setBulk(o)
          }}
          onShare={() => setShare({ paths: chosen.map((e) => e.path), permissions: 'read' })}
          onClear={() => setSelected(new Set())}
          onDownloadZip={() => downloadZip(chosen)}
        />
      ) : null}
      <ErrorBox error={actionError} />

      {canWrite ? (
        <DropZone folderName={folderName} onFiles={(files) => uploads.start(folder, files)} />
      ) : perms.loading || !list.data ? null : (
        // Said only of a folder the user can list: a refused listing is its own message.
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
                    <th scope="col" class="pick">
                      <input
                        type="checkbox"
                        aria-label="Select all"
                        checked={allSelected}
                        ref={(el) => {
                          if (el) el.indeterminate = chosen.length > 0 && !allSelected
                        }}
                        onChange={() =>
                          setSelected(allSelected ? new Set() : new Set(items.map((e) => e.path)))
                        }
                      />
                    </th>
                    <SortHeader label="Name" field="path" sort={sort} onSort={sortBy} />
                    <SortHeader label="Size" field="size" sort={sort} onSort={sortBy} num />
                    <SortHeader label="Modified" field="modified_at_datetime" sort={sort} onSort={sortBy} />
                    <th scope="col" class="col-type">
                      Type
                    </th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((e) => (
                    <Row
                      key={e.id}
                      entry={e}
                      shown={search ? relative(folder, e.path) : e.display_name}
                      canWriteHere={canWrite}
                      canShare={canShare}
                      selected={selected.has(e.path)}
                      onSelect={(range) => select(e, range)}
                      onAction={(a) => act(e, a)}
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
      {bulk ? (
        <BulkDialog
          op={bulk}
          entries={chosen}
          folder={folder}
          onClose={() => setBulk(null)}
          onDone={(message, close) => {
            if (close) {
              setBulk(null)
              setSelected(new Set())
            }
            setNotice(message)
            setChanged((n) => n + 1)
          }}
        />
      ) : null}
      {share ? (
        <ShareDialog
          paths={share.paths}
          initialPermissions={share.permissions}
          {...(share.title ? { title: share.title } : {})}
          onClose={() => setShare(null)}
          onSaved={() => undefined}
        />
      ) : null}
      {settings ? <FolderSettingsDialog folder={folder} onClose={() => setSettings(false)} /> : null}
      {preview ? (
        <PreviewDialog
          entry={preview}
          onClose={() => setPreview(null)}
          onDownload={() => download(preview)}
        />
      ) : null}
    </>
  )
}
