import { MAX_PER_PAGE } from '../api/list-spec.js'
import type { Container } from '../container.js'

/** Runs a command's work with a container of the command's own environment, closed afterwards. */
export type WithContainer = <T>(fn: (c: Container) => Promise<T>) => Promise<T>

/** One page of a service's list, asked with the API's paging parameters. */
type Page<T> = (query: { per_page: number; cursor?: string }) => Promise<{ items: T[]; next: string | null }>

/** Every page of a list, in order: a command prints the whole list, not its first page. */
export async function allPages<T>(page: Page<T>): Promise<T[]> {
  const all: T[] = []
  let cursor: string | null = null
  do {
    const got: { items: T[]; next: string | null } = await page({
      per_page: MAX_PER_PAGE,
      ...(cursor ? { cursor } : {}),
    })
    all.push(...got.items)
    cursor = got.next
  } while (cursor)
  return all
}
