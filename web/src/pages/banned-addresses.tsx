import { useState } from 'preact/hooks'
import { all, del, type Me } from '../api'
import { ConfirmAction } from '../components/forms'
import type { Route } from '../router'
import { ColumnHeads, ErrorBox, formatDate, Loading, Notice, PageTitle, useAsync } from '../ui'
import './admin.css'

/** A client address the login defender refuses (GET /banned_addresses). */
interface BannedAddress {
  address: string
  banned_at: string
  banned_until: string
  failures: number
}

/** Site admins: the addresses banned for too many failed logins, and lifting a ban. */
export function BannedAddressesPage(_: { route: Route; me: Me }) {
  const bans = useAsync(() => all<BannedAddress>('/banned_addresses'), [])
  const [message, setMessage] = useState<string | null>(null)

  return (
    <section class="admin-page">
      <PageTitle>Banned addresses</PageTitle>
      <p class="muted">
        An address with too many failed logins (any user, over the web, the API, SFTP, FTP or WebDAV) is
        refused for a while, even with a correct password. Lifting a ban lets it log in again at once and
        forgets its failures.
      </p>
      {message ? <Notice>{message}</Notice> : null}
      {bans.loading && !bans.data ? <Loading /> : null}
      <ErrorBox error={bans.error} />
      {bans.data && bans.data.length === 0 ? <p class="muted">No address is banned.</p> : null}
      {bans.data && bans.data.length > 0 ? (
        <div class="table-wrap">
          <table class="cards" aria-label="Banned addresses">
            <ColumnHeads
              columns={[
                'Address',
                'Banned since',
                'Banned until',
                { label: 'Failed logins', num: true },
                { label: 'Actions', hidden: true },
              ]}
            />
            <tbody>
              {bans.data.map((b) => (
                <BanRow
                  key={b.address}
                  ban={b}
                  onLifted={() => {
                    setMessage(`The ban of ${b.address} is lifted.`)
                    bans.reload()
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  )
}

function BanRow({ ban: b, onLifted }: { ban: BannedAddress; onLifted: () => void }) {
  const [confirming, setConfirming] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)

  async function lift() {
    setBusy(true)
    setError(null)
    try {
      await del(`/banned_addresses/${encodeURIComponent(b.address)}`)
      onLifted()
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }

  return (
    <>
      <tr>
        <td>
          <code>{b.address}</code>
        </td>
        <td data-label="Banned since">{formatDate(b.banned_at)}</td>
        <td data-label="Banned until">{formatDate(b.banned_until)}</td>
        <td data-label="Failed logins" class="num">
          {b.failures}
        </td>
        <td class="row-actions">
          {confirming ? (
            <ConfirmAction
              question={<>Lift the ban of {b.address}?</>}
              yes="Yes, lift it"
              busy={busy}
              onYes={lift}
              onKeep={() => setConfirming(false)}
            />
          ) : (
            <button
              type="button"
              class="secondary"
              aria-label={`Lift the ban of ${b.address}`}
              onClick={() => {
                setError(null)
                setConfirming(true)
              }}
            >
              Lift ban
            </button>
          )}
        </td>
      </tr>
      {error ? (
        <tr>
          <td colSpan={5}>
            <ErrorBox error={error} />
          </td>
        </tr>
      ) : null}
    </>
  )
}
