import type { ComponentChildren } from 'preact'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { describe } from './api'

/** Loads data for a page; `reload()` fetches again, and a stale answer never overwrites a newer one. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  })
  const seq = useRef(0)
  const reload = useCallback(() => {
    const n = ++seq.current
    setState((s) => ({ ...s, loading: true, error: null }))
    load().then(
      (data) => n === seq.current && setState({ data, error: null, loading: false }),
      (error) => n === seq.current && setState({ data: undefined, error, loading: false }),
    )
  }, deps)
  useEffect(reload, [reload])
  return { ...state, reload }
}

/** An error in words, announced to screen readers. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null
  return (
    <p class="error" role="alert">
      {describe(error)}
    </p>
  )
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  )
}

export function Loading() {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading…
    </p>
  )
}

export function PageTitle({
  children,
  actions,
}: {
  children: ComponentChildren
  actions?: ComponentChildren
}) {
  useEffect(() => {
    document.title = `${typeof children === 'string' ? children : 'Wharf'} · Wharf`
  }, [children])
  return (
    <div class="page-title">
      <h1>{children}</h1>
      {actions ? <div class="actions">{actions}</div> : null}
    </div>
  )
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return ''
  let v = n
  let u = 0
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${UNITS[u]}`
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}

/** Copies text to the clipboard and says so for a moment. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false)
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text)
        } catch {
          // Without clipboard access (plain http), select-and-copy by hand still works.
        }
        setDone(true)
        setTimeout(() => setDone(false), 1500)
      }}
    >
      {done ? 'Copied' : label}
    </button>
  )
}

/** A column of a table: its heading, right-aligned for numbers, or read only by screen readers. */
export type Column = string | { label: string; num?: boolean; hidden?: boolean }

/** The heading row of a table, one `<th scope="col">` a column. */
export function ColumnHeads({ columns }: { columns: Column[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => {
          const { label, num, hidden } = typeof c === 'string' ? { label: c } : c
          return (
            <th key={label} scope="col" class={num ? 'num' : undefined}>
              {hidden ? <span class="visually-hidden">{label}</span> : label}
            </th>
          )
        })}
      </tr>
    </thead>
  )
}
