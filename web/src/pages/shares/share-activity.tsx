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
  const more = (next: string | null) => (next ? <p class="muted">The {SHOWN} newest are shown.</p> : null)
  return (
    <Modal labelledBy="share-activity-title" class="share-dialog share-activity" onClose={onClose}>
      <h2 id="share-activity-title">Activity of {label}</h2>
      <ErrorBox error={log.error} />
      {log.data ? (
        <>
          <section aria-labelledby="share-visits">
            <h3 id="share-visits">
              Visits ({log.data[0].items.length}
              {log.data[0].next ? '+' : ''})
            </h3>
            {log.data[0].items.length === 0 ? (
              <p class="muted">Nobody has opened this link yet.</p>
            ) : (
              <table class="cards">
                <caption class="visually-hidden">Visits</caption>
                <ColumnHeads columns={['Visitor', 'When']} />
                <tbody>
                  {log.data[0].items.map((v, i) => (
                    <tr key={`${v.created_at}-${i}`}>
                      <td data-label="Visitor">{visitor(v)}</td>
                      <td data-label="When">{formatDate(v.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {more(log.data[0].next)}
          </section>
          <section aria-labelledby="share-downloads">
            <h3 id="share-downloads">
              Downloads ({log.data[1].items.length}
              {log.data[1].next ? '+' : ''})
            </h3>
            {log.data[1].items.length === 0 ? (
              <p class="muted">Nothing has been downloaded yet.</p>
            ) : (
              <table class="cards">
                <caption class="visually-hidden">Downloads</caption>
                <ColumnHeads columns={['File', 'By', 'How', 'When']} />
                <tbody>
                  {log.data[1].items.map((d, i) => (
                    <tr key={`${d.created_at}-${i}`}>
                      <td data-label="File">{d.path}</td>
                      <td data-label="By">{visitor(d.bundle_registration)}</td>
                      <td data-label="How">{d.download_method === 'full_zip' ? 'In a ZIP' : 'On its own'}</td>
                      <td data-label="When">{formatDate(d.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {more(log.data[1].next)}
          </section>
          <section aria-labelledby="share-uploads">
            <h3 id="share-uploads">
              Uploads ({log.data[2].items.length}
              {log.data[2].next ? '+' : ''})
            </h3>
            {log.data[2].items.length === 0 ? (
              <p class="muted">Nothing has been uploaded yet.</p>
            ) : (
              <table class="cards">
                <caption class="visually-hidden">Uploads</caption>
                <ColumnHeads columns={['File', 'By', 'When']} />
                <tbody>
                  {log.data[2].items.map((u, i) => (
                    <tr key={`${u.created_at}-${i}`}>
                      <td data-label="File">
                        {u.path}
                        {u.action === 'update' ? <span class="badge">Replaced</span> : null}
                      </td>
                      <td data-label="By">{visitor(u.bundle_registration)}</td>
                      <td data-label="When">{formatDate(u.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {more(log.data[2].next)}
          </section>
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
