import { useState } from 'preact/hooks'
import { all, type Me } from '../../api'
import { isoToLocalDateTime, localDateTimeToIso } from '../../components/admin-time'
import { href, navigate } from '../../router'
import { useAsync } from '../../ui'
import { type HistoryQuery, PER_PAGE, type Scope, toParams, trimSlashes, type User } from './history-query'

/** The filters of the history page: what to show, kept in the address when applied. */
export function HistoryFilters({ q, me }: { q: HistoryQuery; me: Me }) {
  const [form, setForm] = useState<HistoryQuery>(q)
  const [error, setError] = useState<string | null>(null)
  const users = useAsync<User[]>(() => (me.site_admin ? all<User>('/users') : Promise.resolve([])), [me.id])
  const set = (patch: Partial<HistoryQuery>) => setForm((f) => ({ ...f, ...patch }))

  function submit(e: Event) {
    e.preventDefault()
    setError(null)
    if (form.scope === 'file' && !trimSlashes(form.path)) {
      setError('Enter the path of the file.')
      return
    }
    navigate(href('history', '', toParams(form)))
  }

  const pathLabel =
    form.scope === 'site'
      ? 'Path (exact; % is a wildcard)'
      : form.scope === 'file'
        ? 'File path'
        : 'Folder path (empty: the root folder)'

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="history-filters">
      <h2 id="history-filters" class="visually-hidden">
        Filters
      </h2>
      <div class="form-row">
        <label>
          Show
          <select
            name="scope"
            value={form.scope}
            onChange={(e) => set({ scope: e.currentTarget.value as Scope })}
          >
            <option value="site" disabled={!me.site_admin}>
              {me.site_admin ? 'The whole site' : 'The whole site (site administrators only)'}
            </option>
            <option value="folder">A folder and everything in it</option>
            <option value="file">A file</option>
          </select>
        </label>
        {form.scope === 'site' ? (
          <>
            <label>
              User
              <select name="user_id" value={form.user} onChange={(e) => set({ user: e.currentTarget.value })}>
                <option value="">Anyone</option>
                {(users.data ?? []).map((u) => (
                  <option key={u.id} value={String(u.id)}>
                    {u.username}
                  </option>
                ))}
                {form.user && !users.data?.some((u) => String(u.id) === form.user) ? (
                  <option value={form.user}>user #{form.user}</option>
                ) : null}
              </select>
            </label>
            <label>
              Folder (its direct contents)
              <input
                name="folder"
                value={form.folder}
                onInput={(e) => set({ folder: e.currentTarget.value })}
              />
            </label>
          </>
        ) : null}
        <label class="grow">
          {pathLabel}
          <input
            name="path"
            value={form.path}
            placeholder={form.scope === 'site' ? 'e.g. reports/%.csv' : 'e.g. reports/2026'}
            onInput={(e) => set({ path: e.currentTarget.value })}
          />
        </label>
      </div>
      <div class="form-row">
        <label>
          From
          <input
            name="start_at"
            type="datetime-local"
            value={isoToLocalDateTime(form.start)}
            onInput={(e) => set({ start: localDateTimeToIso(e.currentTarget.value) ?? '' })}
          />
        </label>
        <label>
          Until
          <input
            name="end_at"
            type="datetime-local"
            value={isoToLocalDateTime(form.end)}
            onInput={(e) => set({ end: localDateTimeToIso(e.currentTarget.value) ?? '' })}
          />
        </label>
        <label>
          Rows per page
          <select
            name="per_page"
            value={form.perPage}
            onChange={(e) => set({ perPage: e.currentTarget.value })}
          >
            {PER_PAGE.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <div class="actions">
          <button type="submit">Show history</button>
          <a class="button secondary" href={href('history')}>
            Clear
          </a>
        </div>
      </div>
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  )
}
