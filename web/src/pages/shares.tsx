import { useState } from 'preact/hooks'
import { del, get, type Me } from '../api'
import { PagedTable, useCursorPages } from '../components/accounts-paging'
import { ConfirmAction } from '../components/forms'
import { type Bundle, permissionLabel, ShareDialog } from '../components/share-dialog'
import { ShareActivity } from './shares/share-activity'
import './files.css'
import { ColumnHeads, CopyButton, ErrorBox, formatDate, Notice, PageTitle, useAsync } from '../ui'

const PER_PAGE = 25

/**
 * The share links of the signed-in user (a site admin sees everyone's, with their owner): each
 * link's paths and terms, its link to copy, and editing or deleting it.
 */
export function SharesPage({ me }: { me: Me }) {
  const list = useCursorPages<Bundle>('/bundles', {}, PER_PAGE)
  const [editing, setEditing] = useState<Bundle | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const columns = ['Link', 'Shared', 'Recipients may', 'Expires', 'Uses', 'Created']
  if (me.site_admin) columns.push('Owner')
  columns.push('Actions')
  return (
    <section>
      <PageTitle>Shares</PageTitle>
      <p class="muted">
        Links that let people without an account download or upload files. Share a file or folder from the
        Files page.
      </p>
      {notice ? <Notice>{notice}</Notice> : null}
      <ErrorBox error={error} />
      <PagedTable list={list} label="Share links" empty="No share links yet.">
        {(items) => (
          <table class="shares-table cards">
            <caption class="visually-hidden">Share links</caption>
            <ColumnHeads columns={columns} />
            <tbody>
              {items.map((b) => (
                <ShareRow
                  key={b.id}
                  bundle={b}
                  showOwner={me.site_admin}
                  onEdit={async () => {
                    setNotice(null)
                    setError(null)
                    // The list has no paths: the record itself has them.
                    try {
                      setEditing(await get<Bundle>(`/bundles/${b.id}`))
                    } catch (err) {
                      setError(err)
                    }
                  }}
                  onDeleted={() => {
                    setNotice(`Deleted the link ${b.url}`)
                    list.reload()
                  }}
                />
              ))}
            </tbody>
          </table>
        )}
      </PagedTable>
      {editing ? (
        <ShareDialog
          paths={editing.paths ?? []}
          bundle={editing}
          onClose={() => setEditing(null)}
          onSaved={(b) => {
            setEditing(null)
            setNotice(`Saved the link ${b.url}`)
            list.reload()
          }}
        />
      ) : null}
    </section>
  )
}

/** One link: what is shared (a list has no paths; a link's own record does), and its actions. */
function ShareRow({
  bundle: b,
  showOwner,
  onEdit,
  onDeleted,
}: {
  bundle: Bundle
  showOwner: boolean
  onEdit: () => void
  onDeleted: () => void
}) {
  const [confirming, setConfirming] = useState(false)
  const [showing, setShowing] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const paths = useBundlePaths(b)

  async function remove() {
    setBusy(true)
    setError(null)
    try {
      await del(`/bundles/${b.id}`)
      onDeleted()
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  const label = b.description || b.code
  return (
    <>
      <tr data-bundle-id={b.id}>
        <td class="share-link">
          <a href={b.url} target="_blank" rel="noreferrer">
            {b.url}
          </a>
          {b.password_protected ? <span class="badge">Password</span> : null}
          {b.require_registration ? <span class="badge">Registration</span> : null}
        </td>
        <td data-label="Shared">{paths ?? '…'}</td>
        <td data-label="Recipients may">{permissionLabel(b.permissions)}</td>
        <td data-label="Expires">{b.expires_at ? formatDate(b.expires_at) : 'Never'}</td>
        <td data-label="Uses">{b.max_uses ? `at most ${b.max_uses}` : 'No limit'}</td>
        <td data-label="Created">{formatDate(b.created_at)}</td>
        {showOwner ? <td data-label="Owner">{b.username ?? 'Site-wide key'}</td> : null}
        <td class="row-actions">
          {confirming ? (
            <ConfirmAction
              question={<>Delete the link {label}? It stops working at once.</>}
              yes="Yes, delete"
              busy={busy}
              onYes={remove}
              onKeep={() => setConfirming(false)}
            />
          ) : (
            <div class="share-actions">
              <CopyButton text={b.url} label="Copy link" />
              <button
                type="button"
                class="secondary"
                aria-label={`Activity of ${label}`}
                onClick={() => setShowing(true)}
              >
                Activity
              </button>
              <button type="button" class="secondary" aria-label={`Edit ${label}`} onClick={onEdit}>
                Edit
              </button>
              <button
                type="button"
                class="danger"
                aria-label={`Delete ${label}`}
                onClick={() => {
                  setError(null)
                  setConfirming(true)
                }}
              >
                Delete
              </button>
            </div>
          )}
          {showing ? <ShareActivity bundle={b} onClose={() => setShowing(false)} /> : null}
        </td>
      </tr>
      {error ? (
        <tr>
          <td colSpan={showOwner ? 8 : 7}>
            <ErrorBox error={error} />
          </td>
        </tr>
      ) : null}
    </>
  )
}

/** A link's paths, from its own record (lists leave them out), joined for the table. */
function useBundlePaths(b: Bundle): string | null {
  const full = useAsync(() => (b.paths ? Promise.resolve(b) : get<Bundle>(`/bundles/${b.id}`)), [b.id])
  if (full.error) return ''
  return full.data ? (full.data.paths ?? []).join(', ') : null
}
