import { PERMISSION_SET_LABELS } from '../../../../src/identity/permission-sets'
import type { ApiKeyJson } from '../../../../src/modules/api-keys/api-key-model'
import { localDateToIso } from '../../components/admin-time'
import { formatDate } from '../../ui'

/** The ApiKey resource as the API shows it (`key` only in the answer to the POST that made it). */
export type ApiKey = ApiKeyJson

export interface User {
  id: number
  username: string
  name: string | null
}

/** The permission sets the API accepts, in words: the server's own list. */
export const PERMISSION_SETS: { value: string; label: string }[] = Object.entries(PERMISSION_SET_LABELS).map(
  ([value, label]) => ({ value, label }),
)

/** The API's time for an expiry date picked in the form, or an error the form shows. */
export function expiryIso(date: string): string {
  const iso = localDateToIso(date)
  if (!iso) throw new Error('The expiry date is not a valid date.')
  return iso
}

/** The choice of a key's permission set, the same when creating a key and when editing one. */
export function PermissionSetSelect({
  name,
  value,
  disabled,
  onValue,
}: {
  name?: string
  value: string
  disabled: boolean
  onValue: (value: string) => void
}) {
  return (
    <label>
      Permission set
      <select name={name} value={value} disabled={disabled} onChange={(e) => onValue(e.currentTarget.value)}>
        {PERMISSION_SETS.map((p) => (
          <option key={p.value} value={p.value}>
            {p.label}
          </option>
        ))}
      </select>
    </label>
  )
}

/** An expiry set as a date (midnight here) shows as that date; any other time in full. */
export function formatExpiry(iso: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  const midnight = d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0
  return midnight ? d.toLocaleDateString() : formatDate(iso)
}

export function keyName(k: ApiKey): string {
  return k.name || k.descriptive_label
}
