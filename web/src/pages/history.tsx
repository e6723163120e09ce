import type { Me } from '../api'
import type { Route } from '../router'
import { PageTitle } from '../ui'
import { HistoryExportPanel } from './history/history-export'
import { HistoryFilters } from './history/history-filters'
import { readQuery } from './history/history-query'
import { HistoryTable } from './history/history-table'
import './admin.css'

export function HistoryPage({ route, me }: { route: Route; me: Me }) {
  const q = readQuery(route.params, me)
  const viewKey = JSON.stringify(q)
  return (
    <section class="admin-page">
      <PageTitle>History</PageTitle>
      <p class="muted">
        What was done in the last 24 hours: uploads, downloads, moves, sign-ins, changes to users and keys.
        For anything older, export the full history below.
      </p>
      <HistoryFilters key={`f-${viewKey}`} q={q} me={me} />
      <HistoryTable key={`t-${viewKey}`} q={q} me={me} />
      <HistoryExportPanel key={`e-${viewKey}`} q={q} me={me} />
    </section>
  )
}
