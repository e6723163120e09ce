import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

const FOCUSABLE = 'a[href], button, input, select, textarea, iframe, [tabindex]:not([tabindex="-1"])'

/**
 * A modal dialog: the browser's own <dialog> opened with showModal, so the rest of the page is
 * inert and Tab cycles inside it, Escape closes it, and the focus returns to where it was.
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
      onKeyDown={(e) => {
        // The page behind is inert, but Tab would still leave for the browser's own controls.
        if (e.key !== 'Tab' || !ref.current) return
        const all = Array.from(ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)).filter(
          (el) => !el.hasAttribute('disabled') && el.getClientRects().length > 0,
        )
        const first = all[0]
        const last = all[all.length - 1]
        if (!first || !last) return
        if (e.shiftKey && document.activeElement === first) {
          e.preventDefault()
          last.focus()
        } else if (!e.shiftKey && document.activeElement === last) {
          e.preventDefault()
          first.focus()
        }
      }}
    >
      {children}
    </dialog>
  )
}
