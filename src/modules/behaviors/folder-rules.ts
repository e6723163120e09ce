import type { Kysely } from 'kysely'
import { nameOf, parentOf } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import { applyingAt } from './behavior-matching.js'
import type { BehaviorRepository, BehaviorRow } from './behavior-repository.js'
import { checkName, NAME_RULE_TYPES, type NameRule } from './name-rules.js'

/**
 * The folder behaviors that the file core enforces on every new name, whatever the front end:
 * an upload (REST, SFTP, FTP, WebDAV, a share link), and the files a rename, move or copy puts
 * into a folder. One statement finds the rules of a folder; a tree moved or copied is checked
 * against the rules of the place each of its files lands in.
 */
export class FolderRules {
  constructor(private readonly behaviors: BehaviorRepository) {}

  /** A folder moved: its behaviors, and those inside it, go with it, in the move's transaction. */
  followMove(tx: Kysely<Database>, siteId: number, from: string, to: string): Promise<void> {
    return this.behaviors.on(tx).moveTree(siteId, from, to)
  }

  /** Refuses a file about to be written at `path` whose name its folder's rules do not take. */
  async checkNewFile(siteId: number, path: string): Promise<void> {
    const folder = parentOf(path)
    const rows = await this.behaviors.onAndAbove(siteId, folder, NAME_RULE_TYPES)
    if (rows.length === 0) return
    checkName(nameOf(path), applyingAt(rows, folder).map(ruleOf))
  }

  /**
   * Refuses a folder moved or copied to `base` when a file of it would land where the rules do
   * not take its name. `newFilePaths` lists where its files land; it is called only when a rule
   * lies on `base`, above or inside it.
   */
  async checkTree(siteId: number, base: string, newFilePaths: () => Promise<string[]>): Promise<void> {
    const rows = await this.behaviors.aroundTree(siteId, base, NAME_RULE_TYPES)
    if (rows.length === 0) return
    const byFolder = new Map<string, NameRule[]>()
    for (const path of await newFilePaths()) {
      const folder = parentOf(path).toLowerCase()
      let rules = byFolder.get(folder)
      if (!rules) {
        rules = applyingAt(rows, folder).map(ruleOf)
        byFolder.set(folder, rules)
      }
      checkName(nameOf(path), rules)
    }
  }
}

function ruleOf(row: BehaviorRow): NameRule {
  const v = JSON.parse(row.value) as Record<string, unknown>
  const base = { id: row.id, path: row.path }
  switch (row.behavior) {
    case 'limit_file_extensions':
      return {
        ...base,
        behavior: 'limit_file_extensions',
        extensions: v['extensions'] as string[],
        mode: v['mode'] === 'deny' ? 'deny' : 'allow',
      }
    case 'limit_file_regex':
      return { ...base, behavior: 'limit_file_regex', regex: v['regex'] as string }
    default:
      return { ...base, behavior: 'limit_filename_length', maxLength: v['max_length'] as number }
  }
}
