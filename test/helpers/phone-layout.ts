import type { Page } from 'playwright-core'

/**
 * Elements that reach past the right edge of the window, outside a `.table-wrap` (where a wide
 * table scrolls in its own frame): at phone width there should be none.
 */
export async function overflowing(page: Page): Promise<string[]> {
  const width = page.viewportSize()?.width ?? 0
  return page
    .locator('body *')
    .evaluateAll(
      (els: any[], w: number) =>
        els
          .filter((e) => !e.closest('.table-wrap') && e.getBoundingClientRect().right > w + 1)
          .map((e) => `${e.tagName}.${e.className}`),
      width,
    )
}

/** A box that lies partly or wholly outside another (`what`), or is not visible at all. */
export interface CutOff {
  what: string
  left: number
  right: number
}

/**
 * Each element the locator finds that is not shown whole inside the window's width, or inside
 * `within` (a card or frame that would clip it): invisible, or reaching past an edge.
 */
export async function cutOff(page: Page, selector: string, within?: string): Promise<CutOff[]> {
  const width = page.viewportSize()?.width ?? 0
  return page.locator(selector).evaluateAll(
    (els: any[], [w, frame]: [number, string | null]) =>
      els.flatMap((e) => {
        const r = e.getBoundingClientRect()
        const box = frame ? e.closest(frame)?.getBoundingClientRect() : null
        const min = box ? Math.max(0, box.left) : 0
        const max = box ? Math.min(w, box.right) : w
        const hidden = !e.checkVisibility() || r.width === 0 || r.height === 0
        if (!hidden && r.left >= min - 0.5 && r.right <= max + 0.5) return []
        const what = `${e.tagName.toLowerCase()} "${(e.textContent ?? '').trim().slice(0, 40)}"`
        return [{ what, left: Math.round(r.left), right: Math.round(r.right) }]
      }),
    [width, within ?? null] as [number, string | null],
  )
}
