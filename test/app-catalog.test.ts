import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { createContainer } from '../src/container.js'
import { APP_TYPES, DEFAULT_APPS_FILE, loadAppCatalog } from '../src/modules/apps/app-catalog.js'
import { builtServer, projectRoot } from './helpers/server-process.js'

const run = promisify(execFile)
let dir: string
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-catalog-'))
})
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true })
})

let n = 0
/** Writes `content` (JSON unless a string) to a fresh file and returns its path. */
async function file(content: unknown): Promise<string> {
  const f = path.join(dir, `apps-${n++}.json`)
  await fs.writeFile(f, typeof content === 'string' ? content : JSON.stringify(content))
  return f
}

/** The problems of the ConfigError that loading `f` throws. */
function problemsOf(f: string): string[] {
  try {
    loadAppCatalog(f)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).problems
  }
  throw new Error(`expected ${f} to be refused`)
}

const ok = { name: 'Acme', app_type: 'sdk' }

describe('the default app catalog', () => {
  it('is valid, names each entry once, and features some', () => {
    const apps = loadAppCatalog()
    expect(apps.length).toBeGreaterThanOrEqual(5)
    expect(new Set(apps.map((a) => a.name.toLowerCase())).size).toBe(apps.length)
    expect(apps.some((a) => a.featured)).toBe(true)
    for (const a of apps) expect(APP_TYPES).toContain(a.app_type)
  })

  it('claims tests only for the JavaScript SDK and shows no invented images', () => {
    for (const a of loadAppCatalog()) {
      expect([a.icon_url, a.logo_url, a.logo_thumbnail_url, a.marketing_youtube_url]).toEqual([
        null,
        null,
        null,
        null,
      ])
      expect(a.screenshot_list_urls).toEqual([])
      if (a.app_type === 'sdk' && a.name !== 'Files.com JavaScript SDK')
        expect(a.short_description).toContain('not tested against Wharf')
    }
  })
})

describe('APPS_FILE', () => {
  it('replaces the default catalog, filling the fields left out', async () => {
    const apps = loadAppCatalog(await file({ apps: [ok] }))
    expect(apps).toEqual([
      {
        name: 'Acme',
        extended_description: null,
        short_description: null,
        documentation_links: {},
        icon_url: null,
        logo_url: null,
        screenshot_list_urls: [],
        logo_thumbnail_url: null,
        sso_strategy_type: null,
        remote_server_type: null,
        folder_behavior_type: null,
        external_homepage_url: null,
        marketing_youtube_url: null,
        tutorial_youtube_url: null,
        app_type: 'sdk',
        featured: false,
      },
    ])
    expect(loadAppCatalog(await file({ apps: [] }))).toEqual([])
  })

  it('extends it with "extends": "default", replacing a default entry by name', async () => {
    const defaults = loadAppCatalog()
    const apps = loadAppCatalog(
      await file({ extends: 'default', apps: [ok, { name: 'OUTBOUND WEBHOOKS', app_type: 'sdk' }] }),
    )
    expect(apps.map((a) => a.name)).toEqual([
      ...defaults.map((a) => a.name).filter((x) => x !== 'Outbound webhooks'),
      'Acme',
      'OUTBOUND WEBHOOKS',
    ])
  })

  it('takes the example of the README as it is written there', async () => {
    const readme = await fs.readFile(path.join(projectRoot, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('### App catalog'))
    const example = /```json\n([\s\S]*?)```/.exec(section)![1]!
    const apps = loadAppCatalog(await file(example))
    expect(apps.at(-1)).toMatchObject({ name: 'Nightly export', app_type: 'app_integration', featured: true })
    expect(apps).toHaveLength(loadAppCatalog().length + 1)
  })

  it('is read through loadConfig as an absolute path', () => {
    expect(loadConfig({ APPS_FILE: 'x/apps.json' }).appsFile).toBe(path.resolve('x/apps.json'))
    expect(loadConfig({ APPS_FILE: '' }).appsFile).toBeUndefined()
  })

  it('refuses a value outside the spec’s enumerations, naming the entry and field', async () => {
    const bad = {
      apps: [ok, { name: 'Hooks', app_type: 'folder_behavior', folder_behavior_type: 'webhooks' }],
    }
    const f = await file(bad)
    expect(problemsOf(f)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^APPS_FILE ${f.replace(/[.\\]/g, '\\$&')}: apps\\[1\\] \\("Hooks"\\): folder_behavior_type must be one of webhook, file_expiration, .* \\(got "webhooks"\\)$`,
        ),
      ),
    ])
    for (const [field, value] of [
      ['app_type', 'plugin'],
      ['sso_strategy_type', 'github'],
      ['remote_server_type', 'ftps'],
    ]) {
      const [p] = problemsOf(await file({ apps: [{ ...ok, [field!]: value }] }))
      expect(p).toContain(`apps[0] ("Acme"): ${field} must be one of`)
      expect(p).toContain(`(got "${value}")`)
    }
  })

  it('refuses missing names and types, wrong types, unknown fields and bad links', async () => {
    const cases: [unknown, string][] = [
      [{ app_type: 'sdk' }, 'apps[0]: name is required'],
      [{ name: 'X' }, 'apps[0] ("X"): app_type is required'],
      [{ ...ok, name: '  ' }, 'apps[0] ("  "): name must be text of 1 to 255 characters, not blank'],
      [{ ...ok, name: 7 }, 'apps[0]: name must be text of 1 to 255 characters, not blank (got 7)'],
      [{ ...ok, featured: 'yes' }, 'featured must be true or false (got "yes")'],
      [{ ...ok, colour: 'red' }, 'apps[0] ("Acme"): colour is not a field of App'],
      [
        { ...ok, icon_url: 'javascript:alert(1)' },
        'icon_url must be an http(s) URL or a path starting with /',
      ],
      [
        { ...ok, documentation_links: { a: '//evil.example' } },
        'documentation_links.a must be an http(s) URL',
      ],
      [{ ...ok, documentation_links: ['/a'] }, 'documentation_links must be an object of named links'],
      [{ ...ok, screenshot_list_urls: '/a.png' }, 'screenshot_list_urls must be an array of links'],
      [
        { ...ok, short_description: 'x'.repeat(1001) },
        'short_description must be text (or null) of at most 1000',
      ],
    ]
    for (const [entry, message] of cases) {
      const problems = problemsOf(await file({ apps: [entry] }))
      expect(problems.join('\n')).toContain(message)
    }
  })

  it('refuses a file that is missing, not JSON, not a catalog, or names an app twice', async () => {
    const missing = path.join(dir, 'nope.json')
    expect(problemsOf(missing)).toEqual([
      expect.stringMatching(/^APPS_FILE .*nope\.json cannot be read: ENOENT/),
    ])
    expect(problemsOf(await file('{"apps": ['))).toEqual([expect.stringMatching(/is not valid JSON: /)])
    expect(problemsOf(await file([ok]))).toEqual([
      expect.stringContaining('must be a JSON object with an "apps" array'),
    ])
    expect(problemsOf(await file({ apps: {} }))).toEqual([
      expect.stringContaining('"apps" must be an array of apps'),
    ])
    expect(problemsOf(await file({ extends: 'mine', apps: [] }))).toEqual([
      expect.stringContaining('"extends" may only be "default"'),
    ])
    expect(problemsOf(await file({ apps: [ok], app: [] }))).toEqual([
      expect.stringContaining('unknown key "app"'),
    ])
    expect(problemsOf(await file({ apps: [ok, { ...ok, name: 'ACME' }] }))).toEqual([
      expect.stringContaining('apps[1] ("ACME"): name is used by an earlier entry'),
    ])
  })

  it('stops createContainer before the database is opened', async () => {
    const dataDir = path.join(dir, 'data-never-made')
    const config = loadConfig({ DATA_DIR: dataDir, APPS_FILE: await file({ apps: [{ name: 'X' }] }) })
    await expect(createContainer(config)).rejects.toBeInstanceOf(ConfigError)
    await expect(fs.access(dataDir)).rejects.toThrow()
  })

  it('stops `wharf serve` with the message and exit status 1; the build carries the default file', async () => {
    const cli = builtServer()
    await fs.access(path.join(path.dirname(cli), 'modules', 'apps', path.basename(DEFAULT_APPS_FILE)))
    const bad = await file({ extends: 'default', apps: [{ name: 'Acme', app_type: 'plugin' }] })
    const env = { PATH: process.env['PATH'], DATA_DIR: path.join(dir, 'cli-data'), APPS_FILE: bad, PORT: '0' }
    const err = await run(process.execPath, [cli, 'serve'], { env, cwd: projectRoot, timeout: 20_000 }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    )
    expect(err?.code).toBe(1)
    expect(err?.stderr).toContain('Invalid configuration:')
    expect(err?.stderr).toContain(`APPS_FILE ${bad}: apps[0] ("Acme"): app_type must be one of sdk, sso,`)
  }, 120_000)
})
