import type { Kysely } from 'kysely'
import { applyingAt } from '../../api/behavior-matching.js'
import { hasControlCharacter } from '../../api/control-characters.js'
import { ERRORS } from '../../api/error-factories.js'
import { nameOf, parentOf } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import type { BehaviorRepository, BehaviorRow } from './behavior-repository.js'
import { checkName, NAME_RULE_TYPES, type NameRule } from './name-rules.js'
import { type RenameRule, renamed } from './upload-names.js'

const RENAME_TYPES: readonly string[] = ['append_timestamp', 'override_upload_filename']
const UPLOAD_TYPES: readonly string[] = [...NAME_RULE_TYPES, ...RENAME_TYPES]

/** What a lock needs of the caller: whether they administer a folder. */
export interface FolderAdminCheck {
  readonly unrestricted: boolean
  can(path: string, cap: 'admin'): boolean
}

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

  /**
   * Refuses a file about to be written at `path` whose name its folder's rules do not take.
   * `upload`: an upload is opening, so the name a renaming rule would make of it (now) must be
   * a valid name too, before any byte is sent.
   */
  async checkNewFile(siteId: number, path: string, upload?: { at: number; username: string }): Promise<void> {
    const folder = parentOf(path)
    const types = upload ? UPLOAD_TYPES : NAME_RULE_TYPES
    const rows = await this.behaviors.onAndAbove(siteId, folder, types)
    if (rows.length === 0) return
    const applying = applyingAt(rows, folder)
    checkName(nameOf(path), applying.filter((r) => NAME_RULE_TYPES.includes(r.behavior)).map(ruleOf))
    if (upload) renamedPath(path, applying, upload.at, upload.username)
  }

  /**
   * Where an upload of `path` is stored, as its folder's renaming rules (append_timestamp,
   * override_upload_filename) have it at `at`: read in the commit's transaction.
   */
  async storedPath(
    db: Kysely<Database>,
    siteId: number,
    path: string,
    at: number,
    username: string,
  ): Promise<string> {
    const folder = parentOf(path)
    const rows = await this.behaviors.on(db).onAndAbove(siteId, folder, RENAME_TYPES)
    if (rows.length === 0) return path
    return renamedPath(path, applyingAt(rows, folder), at, username)
  }

  /**
   * Refuses creating or deleting the folders `paths` where a `lock_subfolders` behavior locks
   * them, unless the caller is a site admin or administers the locked folder. A lock on folder F
   * with level `children` covers F's direct subfolders, `children_recursive` every folder below F;
   * a lock with `disable_parent_folder_behavior` lifts the locks above it.
   */
  async checkFolderChange(siteId: number, paths: readonly string[], access: FolderAdminCheck): Promise<void> {
    if (access.unrestricted || paths.length === 0) return
    for (const path of paths) {
      const parent = parentOf(path)
      const rows = await this.behaviors.onAndAbove(siteId, parent, ['lock_subfolders'])
      if (rows.length === 0) continue
      let cut = -1
      for (const r of rows) {
        if (r.disable_parent_folder_behavior === 1) cut = Math.max(cut, depthOf(r.path_lower))
      }
      for (const r of rows) {
        if (depthOf(r.path_lower) < cut) continue
        const own = r.path_lower === parent.toLowerCase()
        const level = (JSON.parse(r.value) as Record<string, unknown>)['level']
        if (!own && level !== 'children_recursive') continue
        if (access.can(r.path, 'admin')) continue
        const where = r.path === '' ? 'the root folder' : r.path
        if (own) {
          throw ERRORS.folderLocked(
            `${where} is locked: only its administrators create or delete folders in it (${path} is refused)`,
          )
        }
        throw ERRORS.subfolderLocked(
          `The subfolders of ${where} are locked: only its administrators create or delete folders inside them (${path} is refused)`,
        )
      }
    }
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

/** The path an upload of `path` gets from the renaming rules among `applying`; a bad result is refused. */
function renamedPath(path: string, applying: readonly BehaviorRow[], at: number, username: string): string {
  const rules: RenameRule[] = applying
    .filter((r) => RENAME_TYPES.includes(r.behavior))
    .map((r) => ({
      behavior: r.behavior as RenameRule['behavior'],
      value: JSON.parse(r.value) as Record<string, unknown>,
    }))
  if (rules.length === 0) return path
  const name = renamed(nameOf(path), rules, at, username)
  if (
    name === '' ||
    name === '.' ||
    name === '..' ||
    /[/\\]|\s$/u.test(name) ||
    [...name].length > 255 ||
    hasControlCharacter(name)
  ) {
    throw ERRORS.invalidFilename(
      `The folder's naming rule makes ${nameOf(path)} into ${JSON.stringify(name)}, which is not a valid name`,
    )
  }
  const folder = parentOf(path)
  return folder === '' ? name : `${folder}/${name}`
}

function depthOf(path: string): number {
  return path === '' ? 0 : path.split('/').length
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
