import { useLayoutEffect, useRef } from 'preact/hooks'

/**
 * A ref whose element takes the keyboard focus when `when` turns true (at once by default): a
 * form or a question opened by a button, so keyboard users land in it, not behind it. It does so
 * before the browser paints the element: after it (an effect), a user who had already clicked
 * into another field lost the focus, and what they typed went to this one.
 */
export function useFocusWhen<T extends HTMLElement>(when = true) {
  const ref = useRef<T>(null)
  useLayoutEffect(() => {
    if (when) ref.current?.focus()
  }, [when])
  return ref
}
