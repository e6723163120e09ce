import type { ComponentChildren } from 'preact'
import { page } from '../../api'
import { Modal } from '../../components/modal'
import type { Bundle } from '../../components/share-dialog'
import { ColumnHeads, ErrorBox, formatDate, Loading, useAsync } from '../../ui'

/** How many of each kind of record the dialog shows, newest first. */
const SHOWN = 100

interface Visit {
  name: string | null
  email: string | null
  company: string | null
  ip: string | null
  created_at: string
}
interface Download {
  bundle_registration: Visit
  download_method: string
  path: string
  created_at: string
}
interface Upload {
  action: string
  path: string
  bundle_registration: Visit
  created_at: string
}

/** Who a visit was, in a few words: what they gave when they registered, else where from. */
function visitor(v: Visit | null | undefined): string {
  if (!v) return 'A visitor'
  const who = [v.name, v.email && `<${v.email}>`, v.company && `(${v.company})`].filter(Boolean).join(' ')
  return who || `An anonymous visitor${v.ip ? ` from ${v.ip}` : ''}`
}

/**
 * A link's log: its visits (registrations), the files downloaded through it, one by one or in a
 * ZIP, and the files uploaded into it, newest first, from the owners' list endpoints.
 */
export function ShareActivity({ bundle: b, onClose }: { bundle: Bundle; onClose: () => void }) {
  const label = b.description || b.code
  const order = { 'sort_by[created_at]': 'desc', per_page: SHOWN }
  const log = useAsync(
    () =>
      Promise.all([
        page<Visit>('/bundle_registrations', { bundle_id: b.id, ...order }),
        page<Download>('/bundle_downloads', { bundle_id: b.id, ...order }),
        page<Upload>('/bundle_actions', { 'filter[bundle_id]': b.id, ...order }),
      ]),
    [b.id],
  )
  return (
    <Modal labelledBy="share-activity-title" class="share-dialog share-activity" onClose={onClose}>
      <h2 id="share-activity-title">Activity of {label}</h2>
      <ErrorBox error={log.error} />
      {log.data ? (
        <>
          <LogSection
            title="Visits"
            empty="Nobody has opened this link yet."
            columns={['Visitor', 'When']}
            list={log.data[0]}
            cells={(v) => [visitor(v), formatDate(v.created_at)]}
          />
          <LogSection
            title="Downloads"
            empty="Nothing has been downloaded yet."
            columns={['File', 'By', 'How', 'When']}
            list={log.data[1]}
            cells={(d) => [
              d.path,
              visitor(d.bundle_registration),
              d.download_method === 'full_zip' ? 'In a ZIP' : 'On its own',
              formatDate(d.created_at),
            ]}
          />
          <LogSection
            title="Uploads"
            empty="Nothing has been uploaded yet."
            columns={['File', 'By', 'When']}
            list={log.data[2]}
            cells={(u) => [
              <>
                {u.path}
                {u.action === 'update' ? <span class="badge">Replaced</span> : null}
              </>,
              visitor(u.bundle_registration),
              formatDate(u.created_at),
            ]}
          />
        </>
      ) : log.error ? null : (
        <Loading />
      )}
      <div class="actions">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </Modal>
  )
}

/** One kind of record of the log: a heading with its count, and a table (or a word when none). */
function LogSection<T extends { created_at: string }>({
  title,
  empty,
  columns,
  list,
  cells,
}: {
  title: string
  empty: string
  columns: string[]
  list: { items: T[]; next: string | null }
  cells: (item: T) => ComponentChildren[]
}) {
  const id = `share-${title.toLowerCase()}`
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>{`${title} (${list.items.length}${list.next ? '+' : ''})`}</h3>
      {list.items.length === 0 ? (
        <p class="muted">{empty}</p>
      ) : (
        <table class="cards">
          <caption class="visually-hidden">{title}</caption>
          <ColumnHeads columns={columns} />
          <tbody>
            {list.items.map((item, i) => (
              <tr key={`${item.created_at}-${i}`}>
                {cells(item).map((cell, c) => (
                  <td key={columns[c]} data-label={columns[c]}>
                    {cell}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.next ? <p class="muted">The {SHOWN} newest are shown.</p> : null}
    </section>
  )
}
