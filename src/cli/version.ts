import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Wharf's version, from its package.json: the nearest one named `wharf` above this module, which
 * finds it from `dist/` in a checkout, from an installed package, and from a build elsewhere under
 * the checkout (the tests build into node_modules/.cache).
 */
export function wharfVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = path.join(dir, 'package.json')
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'wharf' && pkg.version) return pkg.version
    }
    const parent = path.dirname(dir)
    if (parent === dir) return 'unknown'
    dir = parent
  }
}
