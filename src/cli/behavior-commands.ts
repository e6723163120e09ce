import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { finished } from 'node:stream/promises'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { stringify } from 'csv-stringify/sync'
import { MAX_PER_PAGE } from '../api/list-spec.js'
import type { Container } from '../container.js'
import { operatorPrincipal } from '../identity/principal.js'
import type { BehaviorJson } from '../modules/behaviors/behavior-service.js'
import type { WithContainer } from './cli-lists.js'

/** The columns of a table, a CSV and an export line, in this order. */
const COLUMNS = [
  'id',
  'path',
  'behavior',
  'name',
  'description',
  'recursive',
  'disable_parent_folder_behavior',
  'value',
] as const

type Row = Record<(typeof COLUMNS)[number], string>

/** A behavior as text cells: flags as true/false, the value as its JSON (secrets as the API hides them). */
function cells(b: BehaviorJson): Row {
  return {
    id: String(b.id),
    path: b.path,
    behavior: b.behavior,
    name: b.name ?? '',
    description: b.description ?? '',
    recursive: String(b.recursive),
    disable_parent_folder_behavior: String(b.disable_parent_folder_behavior),
    value: JSON.stringify(b.value),
  }
}

function csvLines(rows: BehaviorJson[], header: boolean): string {
  return stringify(
    rows.map((b) => COLUMNS.map((k) => cells(b)[k])),
    header ? { header: true, columns: [...COLUMNS] } : {},
  )
}

/** A plain table for a terminal: each column as wide as its widest cell, line breaks shown as ⏎. */
function table(rows: BehaviorJson[]): string {
  const shown = ['id', 'path', 'behavior', 'name', 'recursive', 'value'] as const
  const body = rows.map((b) => {
    const c = cells(b)
    return shown.map((k) => (k === 'path' ? `/${c.path}` : c[k]).replace(/\r?\n/g, '⏎'))
  })
  const all = [[...shown], ...body]
  const widths = shown.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? '')].length)))
  return all
    .map((r) =>
      r
        .map((cell, i) =>
          i === r.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - [...cell].length),
        )
        .join('  '),
    )
    .join('\n')
}

/**
 * Every page of a behavior list, page by page: `page` is the service's list with the API's
 * paging parameters. An export writes each page as it comes rather than holding them all.
 */
async function eachPage(
  page: (q: Record<string, unknown>) => Promise<{ items: BehaviorJson[]; next: string | null }>,
  query: Record<string, unknown>,
  fn: (items: BehaviorJson[], first: boolean) => Promise<void> | void,
): Promise<void> {
  let cursor: string | null = null
  let first = true
  do {
    const got: { items: BehaviorJson[]; next: string | null } = await page({
      ...query,
      per_page: MAX_PER_PAGE,
      ...(cursor ? { cursor } : {}),
    })
    await fn(got.items, first)
    first = false
    cursor = got.next
  } while (cursor)
}

function listQuery(type: string | undefined): Record<string, unknown> {
  return type ? { filter: { behavior: type } } : {}
}

/** The list a `--path` names (the behaviors on that folder, as GET /behaviors/folders/{path}), or all. */
function lister(c: Container, path: string | undefined) {
  const p = operatorPrincipal(c.site.id)
  return (q: Record<string, unknown>) =>
    path === undefined ? c.services.behaviors.list(p, q) : c.services.behaviors.listFor(p, path, q)
}

/** Writes to a file through a temporary name, so a failed export never leaves half a file. */
async function toFile(file: string, write: (out: fs.WriteStream) => Promise<void>): Promise<void> {
  const part = `${file}.part`
  const out = fs.createWriteStream(part, { mode: 0o600 })
  try {
    await write(out)
    out.end()
    await finished(out)
    await fsp.rename(part, file)
  } catch (err) {
    out.destroy()
    await fsp.rm(part, { force: true })
    throw err
  }
}

/** Writes a chunk, waiting for the stream to drain when its buffer is full. */
async function put(out: NodeJS.WritableStream, text: string): Promise<void> {
  if (!out.write(text)) await new Promise((resolve) => out.once('drain', resolve))
}

/**
 * `wharf behaviors list` and `wharf behaviors export`: the folder behaviors from the shell, read
 * through the behavior service as the operator (every folder), so values show exactly as the
 * API shows them: a webhook's header values and verification token as null.
 */
export function registerBehaviorCommands(program: Command, withContainer: WithContainer): void {
  const behaviors = program.command('behaviors').description('list and export folder behaviors')

  behaviors
    .command('list')
    .description('print the folder behaviors, sorted by type')
    .option('--path <folder>', 'only the behaviors on this folder (not those inside it)')
    .option('--type <type>', 'only behaviors of this type, e.g. limit_file_extensions')
    .addOption(
      new Option('--format <format>', 'table, json (an array, as GET /behaviors) or csv')
        .choices(['table', 'json', 'csv'])
        .default('table'),
    )
    .action(async (o: { path?: string; type?: string; format: 'table' | 'json' | 'csv' }) => {
      await withContainer(async (c) => {
        const all: BehaviorJson[] = []
        await eachPage(lister(c, o.path), listQuery(o.type), (items) => {
          all.push(...items)
        })
        if (o.format === 'json') console.log(JSON.stringify(all, null, 2))
        else if (o.format === 'csv') process.stdout.write(csvLines(all, true))
        else console.log(all.length ? table(all) : 'no behaviors')
      })
    })

  behaviors
    .command('export')
    .description('write every folder behavior as JSON lines (one behavior a line) or CSV')
    .option('--output <file>', 'write to this file (default: standard output)')
    .addOption(new Option('--format <format>', 'jsonl or csv').choices(['jsonl', 'csv']).default('jsonl'))
    .action(async (o: { output?: string; format: 'jsonl' | 'csv' }) => {
      if (o.output === '') throw new InvalidArgumentError('--output needs a file name')
      await withContainer(async (c) => {
        const write = async (out: NodeJS.WritableStream) => {
          await eachPage(lister(c, undefined), {}, async (items, first) => {
            if (o.format === 'csv') await put(out, csvLines(items, first))
            else for (const b of items) await put(out, `${JSON.stringify(b)}\n`)
          })
        }
        if (o.output) await toFile(o.output, write)
        else await write(process.stdout)
      })
    })
}
