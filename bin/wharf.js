#!/usr/bin/env node
// The `wharf` command from a checkout (`npx wharf …`, or `bin/wharf.js …`): runs the built
// dist/cli.js, first building the server (tsc only, a few seconds; not the web interface) when
// dist/ is missing or older than src/. `npm run build` builds both; an installed copy without
// src/ runs dist/ as it is.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const cli = path.join(root, 'dist', 'cli.js')
const src = path.join(root, 'src')

/** Modification time (ms) of the newest file under `dir`. */
function newest(dir) {
  let latest = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const { mtimeMs } = fs.statSync(path.join(entry.parentPath, entry.name))
    if (mtimeMs > latest) latest = mtimeMs
  }
  return latest
}

/** Why the server must be built first, or '' when dist/ is current (or there is nothing to build). */
function buildReason() {
  if (!fs.existsSync(src)) return ''
  if (!fs.existsSync(cli)) return 'dist/cli.js is missing'
  return newest(src) > fs.statSync(cli).mtimeMs ? 'src/ changed since the last build' : ''
}

const reason = buildReason()
if (reason) {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  if (!fs.existsSync(tsc)) {
    console.error(`wharf: ${reason}; install the dependencies and build it: npm install && npm run build`)
    process.exit(1)
  }
  console.error(`wharf: ${reason}, building the server (tsc -p tsconfig.build.json)…`)
  const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  })
  if (built.status !== 0) {
    console.error(
      'wharf: the build failed (see above); fix it, or run `npm run build` to see the same errors',
    )
    process.exit(1)
  }
}

await import(pathToFileURL(cli).href)
