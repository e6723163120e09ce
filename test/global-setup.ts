import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { chromiumPath } from './helpers/chromium.js'
import { buildServerForRun } from './helpers/server-build.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The web interface built for this run, or '' when browser tests are skipped. */
    webDir: string
    /** cli.js of the server built for this run, for tests that run Wharf as a process. */
    serverCli: string
  }
}

/**
 * Says plainly, once per run, whether the PostgreSQL half of the suite runs and whether the
 * browser tests run; builds the server (for tests that run it as a process) and the web interface
 * (for the browser tests) from the current sources.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env['TEST_DATABASE_URL']) {
    console.log(
      `\n[wharf] database tests run on SQLite and on PostgreSQL (${redact(process.env['TEST_DATABASE_URL'])})\n`,
    )
  } else {
    console.log(
      '\n[wharf] PostgreSQL tests SKIPPED: TEST_DATABASE_URL is not set, so database tests run on SQLite only.\n' +
        '        Set TEST_DATABASE_URL=postgres://user@host:5432/db to run them on PostgreSQL too (.ci/run does).\n',
    )
  }
  // Built beside the web interface: the two builds share nothing.
  const building = buildServerForRun()
  building.catch(() => undefined) // awaited below, whatever happens first
  const browser = chromiumPath()
  if (!browser) {
    console.log(
      '\n[wharf] web interface browser tests SKIPPED: no Chromium found (looked at CHROMIUM_PATH and /usr/bin/chromium).\n' +
        '        Install it with `apt-get install chromium` to run them (.ci/run does).\n',
    )
    project.provide('webDir', '')
    const server = await building
    project.provide('serverCli', server.cli)
    return server.remove
  }
  const webDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'wharf-web-'))
  const { build } = await import('vite')
  await build({
    configFile: path.resolve(import.meta.dirname, '../web/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: webDir, emptyOutDir: true },
  })
  console.log(`\n[wharf] web interface browser tests run in ${browser}\n`)
  project.provide('webDir', webDir)
  const server = await building
  project.provide('serverCli', server.cli)
  return async () => {
    await server.remove()
    await fs.promises.rm(webDir, { recursive: true, force: true })
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')
}
