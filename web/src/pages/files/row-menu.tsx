import { useEffect, useRef, useState } from 'preact/hooks'

export interface MenuItem {
  label: string
  danger?: boolean
  run: () => void
}

/**
 * One menu of actions for a row: a button that opens a list of menu items. Arrow keys, Home and
 * End move between the items, Escape (or a click elsewhere, or Tab) closes it and gives the focus
 * back to the button.
 */
export function RowMenu({ name, items }: { name: string; items: MenuItem[] }) {
  const [open, setOpen] = useState(false)
  const [startAt, setStartAt] = useState<'first' | 'last'>('first')
  // Fixed to the window beside its button, so no scrolling box of the table cuts it off.
  const [pos, setPos] = useState<Record<string, string>>({})
  const button = useRef<HTMLButtonElement>(null)
  const menu = useRef<HTMLDivElement>(null)
  const id = useRef(`menu-${Math.random().toString(36).slice(2)}`).current

  const buttons = () => Array.from(menu.current?.querySelectorAll<HTMLButtonElement>('[role=menuitem]') ?? [])
  useEffect(() => {
    if (!open) return
    const list = buttons()
    ;(startAt === 'last' ? list[list.length - 1] : list[0])?.focus()
    const away = (e: PointerEvent) => {
      const t = e.target as Node
      if (!menu.current?.contains(t) && !button.current?.contains(t)) setOpen(false)
    }
    // The window scrolled or resized: the menu would no longer sit by its button.
    const gone = (e: Event) => {
      if (!menu.current?.contains(e.target as Node)) setOpen(false)
    }
    document.addEventListener('pointerdown', away)
    window.addEventListener('scroll', gone, true)
    window.addEventListener('resize', gone)
    return () => {
      document.removeEventListener('pointerdown', away)
      window.removeEventListener('scroll', gone, true)
      window.removeEventListener('resize', gone)
    }
  }, [open])

  if (items.length === 0) return null
  function show(at: 'first' | 'last') {
    const r = button.current?.getBoundingClientRect()
    if (r) {
      const tall = items.length * 38 + 12
      const below = r.bottom + tall <= window.innerHeight || r.top < tall
      setPos({
        right: `${Math.max(4, window.innerWidth - r.right)}px`,
        ...(below ? { top: `${r.bottom + 2}px` } : { bottom: `${window.innerHeight - r.top + 2}px` }),
      })
    }
    setStartAt(at)
    setOpen(true)
  }
  const close = (focus = true) => {
    setOpen(false)
    if (focus) button.current?.focus()
  }
  function onMenuKey(e: KeyboardEvent) {
    const list = buttons()
    const at = list.indexOf(document.activeElement as HTMLButtonElement)
    const go = (i: number) => {
      e.preventDefault()
      list[(i + list.length) % list.length]?.focus()
    }
    if (e.key === 'ArrowDown') go(at + 1)
    else if (e.key === 'ArrowUp') go(at - 1)
    else if (e.key === 'Home') go(0)
    else if (e.key === 'End') go(list.length - 1)
    else if (e.key === 'Escape') {
      e.preventDefault()
      e.stopPropagation()
      close()
    } else if (e.key === 'Tab') close(false)
  }
  return (
    <div class="row-menu">
      <button
        ref={button}
        type="button"
        class="secondary menu-button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        aria-label={`Actions for ${name}`}
        onClick={() => (open ? setOpen(false) : show('first'))}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault()
            show(e.key === 'ArrowUp' ? 'last' : 'first')
          }
        }}
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {open ? (
        <div
          ref={menu}
          id={id}
          role="menu"
          aria-label={`Actions for ${name}`}
          class="menu"
          style={pos}
          onKeyDown={onMenuKey}
        >
          {items.map((it) => (
            <button
              key={it.label}
              type="button"
              role="menuitem"
              tabIndex={-1}
              class={it.danger ? 'danger-text' : undefined}
              onClick={() => {
                close()
                it.run()
              }}
            >
              {it.label}
            </button>
          ))}
        </div>
      ) : null}
    </div>
  )
}
