import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { page as fetchPage, type Query } from '../api'
import { ErrorBox, Loading, useAsync } from '../ui'

/**
 * One page of a cursor-paged list, with the cursors seen so far kept so "Previous" returns to
 * exactly the page the user saw (the API's cursors only go forward from a page's end).
 */
export function useCursorPages<T>(path: string, query: Query, perPage: number) {
  const key = JSON.stringify([path, query, perPage])
  const [seen, setSeen] = useState<{ key: string; cursors: (string | null)[] }>({ key, cursors: [null] })
  // Another filter starts again from the first page.
  const cursors = seen.key === key ? seen.cursors : [null]
  const cursor = cursors[cursors.length - 1] ?? null
  const state = useAsync(() => fetchPage<T>(path, { ...query, per_page: perPage, cursor }), [key, cursor])
  const nextCursor = state.data?.next ?? null
  return {
    ...state,
    pageNumber: cursors.length,
    hasPrevious: cursors.length > 1,
    hasNext: nextCursor !== null,
    next: () => nextCursor && setSeen({ key, cursors: [...cursors, nextCursor] }),
    previous: () => cursors.length > 1 && setSeen({ key, cursors: cursors.slice(0, -1) }),
  }
}

/** Previous / next buttons of a paged list, labelled with what they page through. */
export function Pager({
  label,
  pageNumber,
  hasPrevious,
  hasNext,
  previous,
  next,
}: {
  label: string
  pageNumber: number
  hasPrevious: boolean
  hasNext: boolean
  previous: () => void
  next: () => void
}) {
  if (!hasPrevious && !hasNext) return null
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" class="secondary" disabled={!hasPrevious} onClick={previous}>
        Previous
      </button>
      <span class="muted">Page {pageNumber}</span>
      <button type="button" class="secondary" disabled={!hasNext} onClick={next}>
        Next
      </button>
    </nav>
  )
}

export type CursorPages<T> = ReturnType<typeof useCursorPages<T>>

/**
 * A paged list as a table: its error, "Loading…" until the first page arrives, what to say when
 * nothing matches, the table of the page's items, and the paging bar under it.
 */
export function PagedTable<T>({
  list,
  label,
  empty,
  error = list.error,
  children,
}: {
  list: CursorPages<T>
  /** What the pages are of, naming the paging bar. */
  label: string
  empty: ComponentChildren
  error?: unknown
  children: (items: T[]) => ComponentChildren
}) {
  const items = list.data?.items
  return (
    <>
      <ErrorBox error={error} />
      {list.loading && !items ? <Loading /> : null}
      {items && items.length === 0 ? <p class="muted">{empty}</p> : null}
      {items && items.length > 0 ? <div class="table-wrap">{children(items)}</div> : null}
      <Pager label={label} {...list} />
    </>
  )
}
