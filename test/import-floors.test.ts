import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/**
 * The floors of src/, top to bottom: a file may import its own floor and those below it, never
 * one above, and no chain of imports may come back to where it started. Each file is judged by
 * the folder it lies in (see docs/architecture.md).
 */
const FLOORS: { floor: number; name: string; match: (file: string) => boolean }[] = [
  {
    floor: 6,
    name: 'entry points',
    match: (f) =>
      ['server.ts', 'cli.ts', 'app.ts', 'container.ts', 'config.ts', 'logger.ts'].includes(f) ||
      f.startsWith('cli/'),
  },
  { floor: 5, name: 'front ends', match: (f) => /^(http|sftp|ftp|dav|connections)\//.test(f) },
  { floor: 4, name: 'modules', match: (f) => f.startsWith('modules/') },
  {
    floor: 3,
    name: 'background machinery',
    match: (f) => /^(webhooks|exports|checksums|jobs|mail)\//.test(f),
  },
  { floor: 2, name: 'storage and identity', match: (f) => /^(blobs|db|security|identity)\//.test(f) },
  { floor: 1, name: 'api and metrics', match: (f) => /^(api|metrics)\//.test(f) },
]

/**
 * Upward imports allowed for now, `from → to` (paths under src/), each with the reason and the way
 * down. None is left: a new upward import fails, and so does an entry that no longer exists.
 */
const ALLOWED_UPWARD = new Set<string>([])

const SRC = path.resolve(import.meta.dirname, '../src')

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(full)
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : []
  })
}

/** The project files a file imports (static, type-only, re-exports and dynamic `import()`). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true)
  return importedFiles
    .map((i) => i.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => {
      const target = path.resolve(path.dirname(file), spec)
      const asTs = target.replace(/\.js$/, '.ts')
      if (fs.existsSync(asTs)) return asTs
      if (fs.existsSync(target)) return target
      throw new Error(`${rel(file)} imports ${spec}, which does not exist`)
    })
    .filter((target) => target.startsWith(SRC + path.sep) && /\.tsx?$/.test(target))
}

const rel = (file: string) => path.relative(SRC, file).split(path.sep).join('/')

function floorOf(file: string): { floor: number; name: string } {
  const found = FLOORS.find((f) => f.match(file))
  if (!found) throw new Error(`src/${file} lies on no floor: add its folder to FLOORS`)
  return found
}

const graph = new Map<string, string[]>(
  sourceFiles(SRC).map((file) => [rel(file), [...new Set(importsOf(file).map(rel))]]),
)

/** Every cycle's files once, found by a depth-first walk (Tarjan's strongly connected components). */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0
  const stack: string[] = []
  const on = new Set<string>()
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const out: string[][] = []
  const visit = (v: string) => {
    idx.set(v, index)
    low.set(v, index)
    index++
    stack.push(v)
    on.add(v)
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (g.get(v) ?? []).includes(v)) out.push(component.sort())
    }
  }
  for (const v of [...g.keys()].sort()) if (!idx.has(v)) visit(v)
  return out
}

/**
 * The folder a file belongs to, for the folder-level check: each module (`modules/<name>/`) is
 * one, as is every other top folder; of the files directly in `modules/`, the composition
 * (`services.ts`, `repositories.ts`, which build every module) is one and the rest (settings,
 * list requests: what every module may use) another.
 */
function folderOf(file: string): string {
  const parts = file.split('/')
  if (parts.length === 1) return file
  if (parts[0] !== 'modules') return parts[0]!
  if (parts.length > 2) return `modules/${parts[1]}`
  return ['services.ts', 'repositories.ts'].includes(parts[1]!) ? 'modules (composition)' : 'modules (shared)'
}

/** The graph of folders: one folder imports another if any of its files imports one of the other's. */
function folderGraph(files: Map<string, string[]>): Map<string, string[]> {
  const g = new Map<string, Set<string>>()
  for (const [from, targets] of files) {
    const a = folderOf(from)
    const edges = g.get(a) ?? g.set(a, new Set()).get(a)!
    for (const to of targets) if (folderOf(to) !== a) edges.add(folderOf(to))
  }
  return new Map([...g].map(([k, v]) => [k, [...v]]))
}

describe('the import graph of src/', () => {
  it('reads every file and finds the imports (the check below cannot pass on an empty graph)', () => {
    expect(graph.size).toBeGreaterThan(50)
    expect(graph.get('container.ts')).toContain('db/database.ts')
  })

  it('has no import circle', () => {
    expect(cycles(graph)).toEqual([])
  })

  it('has no circle between folders either (a module never imports one that imports it back)', () => {
    expect(cycles(folderGraph(graph))).toEqual([])
  })

  it('imports only from the same floor or one below, apart from the listed exceptions', () => {
    const upward: string[] = []
    for (const [from, targets] of graph) {
      const a = floorOf(from)
      for (const to of targets) {
        const b = floorOf(to)
        if (b.floor > a.floor) upward.push(`${from} → ${to}`)
      }
    }
    expect(upward.filter((u) => !ALLOWED_UPWARD.has(u)).sort()).toEqual([])
  })

  it('lists no exception that no longer exists (the list only shrinks)', () => {
    const edges = new Set([...graph].flatMap(([from, targets]) => targets.map((to) => `${from} → ${to}`)))
    expect([...ALLOWED_UPWARD].filter((e) => !edges.has(e))).toEqual([])
  })

  it('finds a circle and an upward import when there is one (the checks can fail)', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
    ])
    expect(cycles(g)).toEqual([['a.ts', 'b.ts']])
    const byFolder = folderGraph(
      new Map([
        ['modules/a/x.ts', ['modules/b/y.ts']],
        ['modules/b/z.ts', ['modules/a/w.ts']],
        ['modules/a/w.ts', []],
        ['modules/b/y.ts', []],
      ]),
    )
    expect(cycles(byFolder)).toEqual([['modules/a', 'modules/b']])
    expect(floorOf('db/x.ts').floor).toBeLessThan(floorOf('modules/x/y.ts').floor)
  })
})
