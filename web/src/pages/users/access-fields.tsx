import { useState } from 'preact/hooks'
import { Checkbox, Field } from '../../components/forms'
import type { User } from './user-types'

/** What the access part of a user form sends (the Files.com User fields). */
export interface AccessBody {
  ftp_permission: boolean
  sftp_permission: boolean
  dav_permission: boolean
  restapi_permission: boolean
  allowed_ips: string | null
  authenticate_until: string | null
}

/** The rights and limits a user or a group has now, as GET /users and GET /groups show them. */
export type AccessShown = Pick<
  User,
  'ftp_permission' | 'sftp_permission' | 'dav_permission' | 'restapi_permission' | 'allowed_ips'
> & { authenticate_until?: string | null }

/**
 * The rights and address limits of a user, the same on the create and the edit form: a box per
 * way in, the addresses logins may come from, and the day access ends. `self`: the signed-in
 * user's own record, whose web and API right cannot be removed (the server refuses it too).
 * `forGroup`: a group's form, which has no end of access.
 */
export function useAccessFields(user: AccessShown | null, self = false, forGroup = false) {
  const [ftp, setFtp] = useState(user?.ftp_permission ?? true)
  const [sftp, setSftp] = useState(user?.sftp_permission ?? true)
  const [dav, setDav] = useState(user?.dav_permission ?? true)
  const [restapi, setRestapi] = useState(user?.restapi_permission ?? true)
  const [ips, setIps] = useState(user?.allowed_ips ?? '')
  // A date alone is midnight UTC on the server; the day is what the form shows and takes.
  const shownUntil = user?.authenticate_until?.slice(0, 10) ?? ''
  const [until, setUntil] = useState(shownUntil)
  const body: Partial<AccessBody> = {
    ftp_permission: ftp,
    sftp_permission: sftp,
    dav_permission: dav,
    restapi_permission: restapi,
    allowed_ips: ips.trim() === '' ? null : ips,
    // An end the form did not change is not sent: its time of day (set through the API) stays.
    ...((user && until === shownUntil) || forGroup
      ? {}
      : { authenticate_until: until === '' ? null : until }),
  }
  const fields = (
    <fieldset class="access-fields">
      <legend>Access</legend>
      <Checkbox label="SFTP" checked={sftp} onChecked={setSftp} />
      <Checkbox label="FTP" checked={ftp} onChecked={setFtp} />
      <Checkbox label="WebDAV" checked={dav} onChecked={setDav} />
      <Checkbox
        label={`Web interface and REST API${self ? ' (you cannot remove your own)' : ''}`}
        checked={restapi}
        disabled={self}
        onChecked={setRestapi}
      />
      <label>
        Allowed addresses
        <textarea
          name="allowed_ips"
          rows={3}
          value={ips}
          aria-describedby="allowed-ips-hint"
          onInput={(e) => setIps(e.currentTarget.value)}
        />
      </label>
      <p id="allowed-ips-hint" class="muted">
        IPv4 or IPv6 addresses or ranges such as 203.0.113.0/24, one a line; empty for any address.{' '}
        {forGroup
          ? 'Members need the group’s rights and addresses as well as their own.'
          : 'Groups and the site may limit addresses further.'}
      </p>
      {forGroup ? null : <Field label="Access ends on (UTC)" type="date" value={until} onValue={setUntil} />}
    </fieldset>
  )
  return { body, fields }
}
