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
