import type { Me } from '../api'
import type { Route } from '../router'
import { Placeholder } from './placeholder'

export function UsersPage(_props: { route: Route; me: Me }) {
  return <Placeholder title="Users and permissions" />
}
