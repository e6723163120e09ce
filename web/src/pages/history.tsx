import type { Me } from '../api'
import type { Route } from '../router'
import { Placeholder } from './placeholder'

export function HistoryPage(_props: { route: Route; me: Me }) {
  return <Placeholder title="History" />
}
