import { useState } from 'preact/hooks'
import { all, type Me } from '../api'
import type { Route } from '../router'
import { ColumnHeads, ErrorBox, Loading, Notice, PageTitle, useAsync } from '../ui'
import type { ApiKey, User } from './api-keys/api-key-fields'
import { CreateKeyForm, NewKeyNotice } from './api-keys/create-key'
import { KeyRow } from './api-keys/key-row'
import './admin.css'

export function ApiKeysPage({ me }: { route: Route; me: Me }) {
  const keys = useAsync(() => all<ApiKey>('/api_keys', { 'sort_by[expires_at]': 'asc' }), [])
  // Site admins see every key and may make keys for others: they need the users' names.
  const users = useAsync<User[]>(
    () => (me.site_admin ? all<User>('/users') : Promise.resolve([me])),
    [me.id, me.site_admin],
  )
  const [created, setCreated] = useState<ApiKey | null>(null)
  const [message, setMessage] = useState<string | null>(null)

  const nameOf = (userId: number | null): string => {
    if (userId === null) return 'Site-wide (no user)'
    const u = users.data?.find((x) => x.id === userId)
    return u ? u.username : `user #${userId}`
  }

  return (
    <section class="admin-page">
      <PageTitle>API keys</PageTitle>
      <p class="muted">
        A key lets a program use Wharf's API as {me.site_admin ? 'its user' : 'you'}, without a password. Send
        it in the <code>X-ServiceAPI-Key</code> header.
      </p>

      {created?.key ? (
        <NewKeyNotice
          apiKey={created}
          onDone={() => {
            setCreated(null)
          }}
        />
      ) : null}
      {message ? <Notice>{message}</Notice> : null}

      <CreateKeyForm
        me={me}
        users={users.data ?? [me]}
        onCreated={(k) => {
          setMessage(null)
          setCreated(k)
          keys.reload()
        }}
      />

      <h2 id="keys-heading">{me.site_admin ? 'Keys of the site' : 'Your keys'}</h2>
      {keys.loading && !keys.data ? <Loading /> : null}
      <ErrorBox error={keys.error} />
      {keys.data && keys.data.length === 0 ? <p class="muted">No API keys yet.</p> : null}
      {keys.data && keys.data.length > 0 ? (
        <div class="table-wrap">
          <table class="cards" aria-labelledby="keys-heading">
            <ColumnHeads
              columns={[
                'Name',
                'Description',
                'User',
                'Permission set',
                'Folder',
                'Expires',
                'Last used',
                { label: 'Actions', hidden: true },
              ]}
            />
            <tbody>
              {keys.data.map((k) => (
                <KeyRow
                  key={k.id}
                  apiKey={k}
                  owner={nameOf(k.user_id)}
                  onChanged={(what) => {
                    setCreated(null)
                    setMessage(what)
                    keys.reload()
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
