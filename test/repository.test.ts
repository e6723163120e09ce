import fs from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * A clone must build, run and pass its tests on its own: nothing in the project may read the
 * reference folder kept beside the repository (the spec's error types are a fixture in
 * test/fixtures instead).
 */
const root = path.resolve(import.meta.dirname, '..')
const SCANNED = ['src', 'test', 'web', 'bench', '.ci', 'package.json', 'vitest.config.ts']
const TEXT = /\.(ts|tsx|js|mjs|cjs|json|md|css|html)$|^run$/
/** A relative path up into the reference folder (at any depth), or an absolute one. */
const OUTSIDE = /(?:\.\.[/\\])+shared[/\\]|\/work\/shared\b/

async function files(entry: string): Promise<string[]> {
  const full = path.join(root, entry)
  const stat = await fs.stat(full)
  if (!stat.isDirectory()) return [entry]
  const out: string[] = []
  for (const d of await fs.readdir(full, { withFileTypes: true })) {
    const rel = path.join(entry, d.name)
    if (d.isDirectory()) out.push(...(await files(rel)))
    else if (TEXT.test(d.name)) out.push(rel)
  }
  return out
}

describe('the repository', () => {
  it('reads nothing outside its own tree', async () => {
    const offending: string[] = []
    for (const entry of SCANNED) {
      for (const file of await files(entry)) {
        const text = await fs.readFile(path.join(root, file), 'utf8')
        text.split('\n').forEach((line, i) => {
          if (OUTSIDE.test(line)) offending.push(`${file}:${i + 1}: ${line.trim()}`)
        })
      }
    }
    expect(offending).toEqual([])
  })
})
