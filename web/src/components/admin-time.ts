/**
 * Times as the history and API-key forms take them: the browser's own date and datetime-local
 * inputs speak local time without a zone, the API speaks ISO 8601 UTC.
 */

const pad = (n: number) => String(n).padStart(2, '0')

/** `YYYY-MM-DD` of a local date input → the start of that day, local time, as ISO UTC. */
export function localDateToIso(date: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return null
  const d = new Date(`${date}T00:00`)
  return Number.isNaN(d.getTime()) ? null : d.toISOString()
}

/** An ISO time → the local `YYYY-MM-DD` a date input shows. */
export function isoToLocalDate(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
}

/** `YYYY-MM-DDTHH:MM` of a datetime-local input → ISO UTC. */
export function localDateTimeToIso(value: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value)) return null
  const d = new Date(value)
  return Number.isNaN(d.getTime()) ? null : d.toISOString()
}

/** An ISO time → what a datetime-local input shows (local time, to the minute). */
export function isoToLocalDateTime(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  return `${isoToLocalDate(iso)}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}
