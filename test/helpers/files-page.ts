import type { Page } from 'playwright-core'

/** The menu of a Files row, opened by its "Actions for NAME" button. */
export async function openRowMenu(page: Page, name: string) {
  await page.getByRole('button', { name: `Actions for ${name}`, exact: true }).click()
  const menu = page.getByRole('menu', { name: `Actions for ${name}`, exact: true })
  await menu.waitFor()
  return menu
}

/** Chooses one action of a Files row's menu. */
export async function rowAction(page: Page, name: string, action: string): Promise<void> {
  const menu = await openRowMenu(page, name)
  await menu.getByRole('menuitem', { name: action, exact: true }).click()
}

/** The actions a Files row's menu offers, in order; the menu is closed again with Escape. */
export async function rowActions(page: Page, name: string): Promise<string[]> {
  const menu = await openRowMenu(page, name)
  const items = await menu.getByRole('menuitem').allInnerTexts()
  await page.keyboard.press('Escape')
  await menu.waitFor({ state: 'detached' })
  return items
}
