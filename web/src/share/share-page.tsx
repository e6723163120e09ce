import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { ApiError, describe } from '../api'
import { Field } from '../components/forms'
import { DropZone } from '../pages/files/folder-tools'
import { UploadList, useUploads } from '../pages/files/uploads'
import { formatBytes, formatDate, Loading } from '../ui'
import { type PublicBundle, type Registration, ShareApi, type SharedEntry } from './share-api'

/** An API refusal in the words a recipient of a link understands. */
export function visitorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    switch (err.type) {
      case 'processing-failure/invalid-bundle-code':
        return 'This link is not valid. It may have expired or been removed: ask whoever sent it for a new one.'
      case 'not-authorized/bundle-maximum-uses-reached':
        return 'This link has been used as many times as it may be. Ask whoever sent it for a new one.'
      case 'not-authenticated/invalid-credentials':
        return 'That password is not right. Check it and try again.'
      case 'rate-limited/too-many-login-attempts':
        return 'Too many wrong passwords have been tried. Wait a while, then try again.'
      case 'processing-failure/bundle-only-allows-previews':
        return 'This link lets you look at the files, not download them.'
    }
  }
  return describe(err)
}

function Alert({ error }: { error: unknown }) {
  if (!error) return null
  return (
    <p class="error" role="alert">
      {visitorMessage(error)}
    </p>
  )
}

/** The folder inside the share the page shows: the hash (`#/docs/sub`), so Back goes up again. */
function useFolder(): string {
  const read = () =>
    location.hash
      .replace(/^#\/?/, '')
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s))
      .join('/')
  const [folder, setFolder] = useState(read)
  useEffect(() => {
    const on = () => setFolder(read())
    window.addEventListener('hashchange', on)
    return () => window.removeEventListener('hashchange', on)
  }, [])
  return folder
}

/** A share link's page, `/f/<code>`: unlock it, then browse, download and upload. */
export function SharePage({ code }: { code: string }) {
  const api = useMemo(() => new ShareApi(code), [code])
  const [bundle, setBundle] = useState<PublicBundle | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [unlocked, setUnlocked] = useState(false)

  async function load() {
    setError(null)
    try {
      // `/f/` names no link: said as of an unknown one.
      if (code === '') throw new ApiError(422, 'processing-failure/invalid-bundle-code', 'No link')
      let b = await api.show()
      if (!api.registered && !b.password_protected && !b.require_registration) {
        // Nothing to ask: the visit starts at once.
        await api.register({})
      }
      if (api.registered) {
        // Seen with the registration: the shared names come with it.
        b = await api.show()
        setUnlocked(true)
      }
      setBundle(b)
    } catch (err) {
      setError(err)
    }
  }
  useEffect(() => {
    void load()
  }, [api])

  const title = bundle?.description || 'Shared files'
  useEffect(() => {
    document.title = `${title} · Wharf`
  }, [title])

  return (
    <>
      <header class="top share-top">
        <span class="brand">Wharf</span>
      </header>
      <main id="main" class="share-main">
        {error && !bundle ? (
          <>
            <h1>Shared files</h1>
            <Alert error={error} />
          </>
        ) : !bundle ? (
          <Loading />
        ) : !unlocked ? (
          <Unlock
            bundle={bundle}
            api={api}
            onUnlocked={async () => {
              setUnlocked(true)
              try {
                setBundle(await api.show())
              } catch (err) {
                setError(err)
              }
            }}
          />
        ) : (
          <Visit
            bundle={bundle}
            api={api}
            onLost={() => {
              // The visit's code no longer works (the link changed): start again.
              api.forget()
              setUnlocked(false)
              void load()
            }}
          />
        )}
      </main>
    </>
  )
}

/** The password and the registration the link asks for. */
function Unlock({
  bundle,
  api,
  onUnlocked,
}: {
  bundle: PublicBundle
  api: ShareApi
  onUnlocked: () => void
}) {
  const [input, setInput] = useState<Registration>({})
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => heading.current?.focus(), [])
  const asks = (skip: boolean) => bundle.require_registration && !skip
  const field = (
    name: keyof Registration,
    label: string,
    type: 'text' | 'email' | 'password',
    autocomplete: string,
  ) => (
    <Field
      label={label}
      name={name}
      type={type}
      required
      autocomplete={autocomplete}
      value={input[name] ?? ''}
      onValue={(v) => setInput((i) => ({ ...i, [name]: v }))}
    />
  )

  async function submit(e: Event) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api.register(input)
      onUnlocked()
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }

  return (
    <form class="panel share-unlock" onSubmit={submit} aria-labelledby="unlock-title">
      <h1 id="unlock-title" tabIndex={-1} ref={heading}>
        {bundle.description || 'Shared files'}
      </h1>
      {bundle.note ? <p>{bundle.note}</p> : null}
      <p>
        {bundle.password_protected && bundle.require_registration
          ? 'Enter the password you were given and tell us who you are to open these files.'
          : bundle.password_protected
            ? 'Enter the password you were given to open these files.'
            : 'Tell us who you are to open these files.'}
      </p>
      {bundle.password_protected ? field('password', 'Password', 'password', 'current-password') : null}
      {asks(bundle.skip_name) ? field('name', 'Your name', 'text', 'name') : null}
      {asks(bundle.skip_email) ? field('email', 'Your e-mail address', 'email', 'email') : null}
      {asks(bundle.skip_company) ? field('company', 'Your company', 'text', 'organization') : null}
      <Alert error={error} />
      <button type="submit" disabled={busy}>
        Open
      </button>
    </form>
  )
}

function parentOf(path: string): string {
  return path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : ''
}

/** Starts a download of `uri` in the browser, as a link the visitor clicked would. */
function startDownload(uri: string, name: string) {
  const a = document.createElement('a')
  a.href = uri
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
}

/** An unlocked visit: the listing (unless write-only), downloads, and the upload area. */
function Visit({ bundle, api, onLost }: { bundle: PublicBundle; api: ShareApi; onLost: () => void }) {
  const folder = useFolder()
  const lists = bundle.permissions !== 'write'
  const downloads = bundle.permissions === 'read' || bundle.permissions === 'read_write'
  const [entries, setEntries] = useState<SharedEntry[] | null>(null)
  const [listError, setListError] = useState<unknown>(null)
  const [actionError, setActionError] = useState<unknown>(null)
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [changed, setChanged] = useState(0)
  const heading = useRef<HTMLHeadingElement>(null)
  // On opening and on each folder: the heading, so a screen reader starts at the top again.
  useEffect(() => heading.current?.focus(), [folder])

  const lost = (err: unknown) =>
    err instanceof ApiError && err.type === 'not-authenticated/bundle-registration-code-failed'

  useEffect(() => {
    if (!lists) return
    let live = true
    setListError(null)
    api.list(folder).then(
      (items) => {
        if (!live) return
        setEntries(items)
        setSelected(new Set())
      },
      (err) => {
        if (!live) return
        if (lost(err)) onLost()
        setEntries(null)
        setListError(err)
      },
    )
    return () => {
      live = false
    }
  }, [folder, changed])

  const uploads = useUploads(() => setChanged((n) => n + 1), api.uploads)
  // Where an upload goes: the folder shown, or at the top a shared folder the visitor picks.
  const roots = lists
    ? (entries ?? []).filter((e) => e.type === 'directory').map((e) => e.path)
    : (bundle.paths ?? [])
  const [root, setRoot] = useState('')
  const into = folder !== '' ? folder : ((root || roots[0]) ?? '')

  async function act(work: () => Promise<void>) {
    setActionError(null)
    try {
      await work()
    } catch (err) {
      if (lost(err)) onLost()
      setActionError(err)
    }
  }
  const downloadFile = (e: SharedEntry) =>
    act(async () => startDownload(await api.downloadUri(e.path), e.display_name))
  const downloadZip = (paths: string[]) =>
    act(async () => startDownload(await api.zipUri(paths), `${bundle.code}.zip`))

  const crumbs = folder === '' ? [] : folder.split('/')
  const chosen = (entries ?? []).filter((e) => selected.has(e.path))
  const toggle = (path: string) =>
    setSelected((s) => {
      const n = new Set(s)
      if (n.has(path)) n.delete(path)
      else n.add(path)
      return n
    })

  return (
    <>
      <div class="page-title">
        <h1 tabIndex={-1} ref={heading}>
          {bundle.description || 'Shared files'}
        </h1>
      </div>
      {bundle.note ? <p>{bundle.note}</p> : null}
      {bundle.expires_at ? <p class="muted">This link works until {formatDate(bundle.expires_at)}.</p> : null}
      {bundle.permissions === 'preview_only' ? (
        <p class="muted">You can look at these files; downloads are not offered.</p>
      ) : null}

      {lists ? (
        <nav class="breadcrumbs" aria-label="Folders">
          <ol>
            <li>
              <a href="#/" aria-current={folder === '' ? 'page' : undefined}>
                All shared files
              </a>
            </li>
            {crumbs.map((name, i) => {
              const path = crumbs.slice(0, i + 1).join('/')
              return (
                <li key={path}>
                  <a
                    href={`#/${crumbs
                      .slice(0, i + 1)
                      .map(encodeURIComponent)
                      .join('/')}`}
                    aria-current={path === folder ? 'page' : undefined}
                  >
                    {name}
                  </a>
                </li>
              )
            })}
          </ol>
        </nav>
      ) : null}

      <Alert error={actionError} />

      {bundle.can_upload ? (
        <section class="panel share-upload" aria-labelledby="upload-title">
          <h2 id="upload-title">Send files</h2>
          {into === '' ? (
            <p class="muted">Open a shared folder to send files into it.</p>
          ) : (
            <>
              {folder === '' && roots.length > 1 ? (
                <label>
                  Send into
                  <select value={into} onChange={(e) => setRoot(e.currentTarget.value)}>
                    {roots.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                </label>
              ) : null}
              <DropZone
                folderName={into}
                onFiles={(files) => {
                  setActionError(null)
                  uploads.start(into, files)
                }}
              />
            </>
          )}
          <UploadList uploads={uploads} />
        </section>
      ) : null}

      {lists ? (
        <section aria-label="Shared files and folders">
          {listError ? <Alert error={listError} /> : null}
          {!entries && !listError ? <Loading /> : null}
          {entries ? (
            <>
              {downloads && (entries.length > 0 || folder !== '') ? (
                <div class="share-bulk actions">
                  {chosen.length ? (
                    <>
                      <p role="status">{chosen.length} selected</p>
                      <button type="button" onClick={() => downloadZip(chosen.map((e) => e.path))}>
                        Download selected as ZIP
                      </button>
                      <button type="button" class="secondary" onClick={() => setSelected(new Set())}>
                        Clear selection
                      </button>
                    </>
                  ) : (
                    <button
                      type="button"
                      class="secondary"
                      onClick={() => downloadZip(folder === '' ? [''] : [folder])}
                    >
                      {folder === '' ? 'Download everything as ZIP' : 'Download this folder as ZIP'}
                    </button>
                  )}
                </div>
              ) : null}
              {entries.length === 0 ? (
                <p class="muted">{folder === '' ? 'Nothing is shared here now.' : 'This folder is empty.'}</p>
              ) : (
                <div class="table-wrap">
                  <table class="files-table share-table">
                    <thead>
                      <tr>
                        {downloads ? (
                          <th class="pick">
                            <span class="visually-hidden">Selected</span>
                          </th>
                        ) : null}
                        <th>Name</th>
                        <th class="num">Size</th>
                        <th class="when">Modified</th>
                        {downloads ? (
                          <th>
                            <span class="visually-hidden">Download</span>
                          </th>
                        ) : null}
                      </tr>
                    </thead>
                    <tbody>
                      {entries.map((e) => (
                        <tr key={e.path} class={selected.has(e.path) ? 'selected' : undefined}>
                          {downloads ? (
                            <td class="pick">
                              <input
                                type="checkbox"
                                aria-label={`Select ${e.display_name}`}
                                checked={selected.has(e.path)}
                                onChange={() => toggle(e.path)}
                              />
                            </td>
                          ) : null}
                          <td class="name">
                            {e.type === 'directory' ? (
                              <a href={`#/${e.path.split('/').map(encodeURIComponent).join('/')}`}>
                                {e.display_name}
                                <span class="visually-hidden"> (folder)</span>
                              </a>
                            ) : (
                              <span>{e.display_name}</span>
                            )}
                          </td>
                          <td class="num">{e.type === 'directory' ? '—' : formatBytes(e.size)}</td>
                          <td class="when">{formatDate(e.mtime)}</td>
                          {downloads ? (
                            <td class="row-actions">
                              {e.type === 'directory' ? (
                                <button
                                  type="button"
                                  class="secondary"
                                  aria-label={`Download ${e.display_name} as ZIP`}
                                  onClick={() => downloadZip([e.path])}
                                >
                                  ZIP
                                </button>
                              ) : (
                                <button
                                  type="button"
                                  class="secondary"
                                  aria-label={`Download ${e.display_name}`}
                                  onClick={() => downloadFile(e)}
                                >
                                  Download
                                </button>
                              )}
                            </td>
                          ) : null}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              {folder !== '' ? (
                <p>
                  <a
                    href={`#/${parentOf(folder).split('/').filter(Boolean).map(encodeURIComponent).join('/')}`}
                  >
                    Up to {parentOf(folder) || 'all shared files'}
                  </a>
                </p>
              ) : null}
            </>
          ) : null}
        </section>
      ) : null}
    </>
  )
}
