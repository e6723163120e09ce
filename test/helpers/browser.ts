import { type Browser, chromium, type Locator, type Page } from 'playwright-core'
import { afterAll, beforeAll, expect, inject } from 'vitest'
import { chromiumPath } from './chromium.js'
import { ADMIN_PASSWORD, ADMIN_USERNAME, startServer, type TestServer } from './server.js'

/** The web interface as global-setup built it for this run; '' when there is no browser. */
export const webDir = inject('webDir')
/** Browser tests run only where Chromium is installed (global-setup says so when they do not). */
export const hasBrowser = webDir !== ''

/**
 * The options of every browser suite: 90 s a test. Alone, each takes a few seconds; on a loaded
 * machine the browser's steps slow down many times over. A step that never ends is named by its
 * own 25 s limit (newPage): that is how a race in the user forms' focus was found.
 */
export const BROWSER_SUITE = { timeout: 90_000 }

/**
 * Debian's Chromium, headless, with nothing of its own on the network: without these flags it
 * tries Google's hosts at every start.
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath()!,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  })
}

/** A Wharf server (SQLite unless told) that also serves this run's web interface at `/`. */
export function startWebServer(env: Record<string, string> = {}): Promise<TestServer> {
  return startServer('sqlite', { WEB_DIR: webDir, ...env })
}

/** What the tests of a web suite share: its server and its browser. */
export interface WebSuite {
  readonly s: TestServer
  readonly browser: Browser
}

/**
 * Starts a web server (with `env`, or what `env()` gives just before the start) and a browser
 * before the tests of the describe block that calls it, and closes both after them, also when
 * the start failed half-way.
 */
export function webSuite(env: Record<string, string> | (() => Record<string, string>) = {}): WebSuite {
  let s: TestServer | undefined
  let browser: Browser | undefined
  beforeAll(async () => {
    s = await startWebServer(typeof env === 'function' ? env() : env)
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await s?.close()
  })
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('The web suite has not started: use it inside its tests and hooks')
    return v
  }
  return {
    get s() {
      return started(s)
    },
    get browser() {
      return started(browser)
    },
  }
}

const outside = new WeakMap<Page, string[]>()

/**
 * A fresh page (its own storage) whose requests outside the server under test are refused and
 * remembered: the interface must never reach for fonts, CDNs or anything else outside. `alsoTo`:
 * other origins the server itself sends the page to (an S3 bucket's presigned URLs).
 */
export async function newPage(
  browser: Browser,
  s: TestServer,
  viewport = { width: 1280, height: 800 },
  alsoTo: string[] = [],
): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true, viewport })
  // A step that cannot happen fails after 25 s with its own name, inside the test's time.
  context.setDefaultTimeout(25_000)
  const page = await context.newPage()
  const refused: string[] = []
  outside.set(page, refused)
  await context.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(`${s.url}/`) || url.startsWith('data:') || url.startsWith('blob:'))
      return route.continue()
    if (alsoTo.some((origin) => url.startsWith(`${origin}/`))) return route.continue()
    refused.push(url)
    return route.abort()
  })
  return page
}

/** Fails unless every request the page made went to the server under test. */
export function expectNoOutsideRequests(page: Page): void {
  expect(outside.get(page) ?? [], 'requests outside the server').toEqual([])
}

/** Signs in through the sign-in form and waits for the interface to show the user. */
export async function signIn(
  page: Page,
  s: TestServer,
  username = ADMIN_USERNAME,
  password = ADMIN_PASSWORD,
): Promise<void> {
  await page.goto(`${s.url}/`)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor()
}

/** Waits for an element to show (Playwright's own waiting; vitest's expect has no locator matchers). */
export async function shown(locator: Locator, timeout = 10_000): Promise<void> {
  await locator.first().waitFor({ state: 'visible', timeout })
}

/** The text of the first element the locator finds, once it shows. */
export async function textOf(locator: Locator, timeout = 10_000): Promise<string> {
  await shown(locator, timeout)
  return (await locator.first().innerText()).trim()
}
