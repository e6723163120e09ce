import path from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { hasBrowser, launchBrowser, newPage, signIn, startWebServer } from '../../test/helpers/browser.js'
import * as accounts from './accounts.js'
import * as admin from './admin.js'
import * as files from './files.js'
import * as folderSettings from './folder-settings.js'
import * as shareVisitor from './share-visitor.js'
import * as shares from './shares.js'
import type { ShotContext } from './shot.js'
import * as signInShots from './sign-in.js'
import * as webhooks from './webhooks.js'

const OUT = path.resolve(import.meta.dirname, '../../docs/screenshots')

/** Each module seeds a server of its own and photographs its pages. */
const MODULES: Record<string, { shoot(ctx: ShotContext): Promise<void> }> = {
  'sign-in': signInShots,
  files,
  'folder-settings': folderSettings,
  shares,
  'share-visitor': shareVisitor,
  webhooks,
  admin,
  accounts,
}

describe.skipIf(!hasBrowser)('screenshots of the web interface', () => {
  let browser: Browser
  beforeAll(async () => {
    browser = await launchBrowser()
  })
  afterAll(async () => browser?.close())

  for (const [name, mod] of Object.entries(MODULES)) {
    it(name, async () => {
      const s = await startWebServer()
      try {
        const page = await newPage(browser, s)
        await signIn(page, s)
        await mod.shoot({ page, s, out: (shot) => path.join(OUT, `${shot}.png`) })
        await page.context().close()
      } finally {
        await s.close()
      }
    })
  }
})
