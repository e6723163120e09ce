import type { Page } from 'playwright-core'
import type { TestServer } from '../../test/helpers/server.js'

/** What each screenshot module gets: a site admin's signed-in page on a server of its own. */
export interface ShotContext {
  page: Page
  s: TestServer
  /** Where to save the PNG called `name` (docs/screenshots/<name>.png). */
  out(name: string): string
}
