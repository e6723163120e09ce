import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

/**
 * A modal dialog: the browser's own <dialog> opened with showModal, so the rest of the page is
 * inert (the keyboard focus stays inside), Escape closes it, and the focus returns to where it was.
 */
export function Modal({
  labelledBy,
  class: cls,
  onClose,
  children,
}: {
  labelledBy: string
  class?: string
  onClose: () => void
  children: ComponentChildren
}) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const d = ref.current
    const before = document.activeElement as HTMLElement | null
    if (d && !d.open) d.showModal()
    return () => {
      d?.close()
      before?.focus?.()
    }
  }, [])
  return (
    <dialog
      ref={ref}
      class={`op-dialog${cls ? ` ${cls}` : ''}`}
      aria-labelledby={labelledBy}
      onCancel={(e) => {
        e.preventDefault()
        onClose()
      }}
    >
      {children}
    </dialog>
  )
}
