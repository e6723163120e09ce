import { nameOf, parentOf } from '../../api/paths.js'

/**
 * The `display` text of file Actions. The history stores the default form; the /history
 * endpoints rebuild the `full` (whole paths) and `parent` (name and folder) forms from the
 * action's paths when asked (`display=full|parent`).
 */
export type FileActionType = 'create' | 'read' | 'update' | 'destroy' | 'move' | 'copy'
export type DisplayMode = '' | 'full' | 'parent'
export type FileKind = 'file' | 'directory'

const name = (p: string) => nameOf(p) || '/'
const parent = (p: string) => `/${parentOf(p)}`

function show(path: string, mode: DisplayMode): string {
  if (mode === 'full') return `/${path}`
  if (mode === 'parent') return `${name(path)} in ${parent(path)}`
  return name(path)
}

export function describeFileAction(
  action: FileActionType,
  path: string,
  kind: FileKind,
  opts: { source?: string | null; destination?: string | null; mode?: DisplayMode } = {},
): string {
  const mode = opts.mode ?? ''
  const what = kind === 'directory' ? 'folder ' : ''
  switch (action) {
    case 'create':
      return kind === 'directory' ? `Created folder ${show(path, mode)}` : `Uploaded ${show(path, mode)}`
    case 'update':
      return `Replaced ${show(path, mode)}`
    case 'read':
      return `Downloaded ${show(path, mode)}`
    case 'destroy':
      return `Deleted ${what}${show(path, mode)}`
    case 'move':
    case 'copy': {
      const from = opts.source ?? path
      const to = opts.destination ?? path
      const verb = action === 'copy' ? 'Copied' : parent(from) === parent(to) ? 'Renamed' : 'Moved'
      // Full and parent forms name both ends completely; the default form names the item and
      // where it went.
      if (mode === '') return `${verb} ${what}${name(from)} to /${to}`
      return `${verb} ${what}${show(from, mode)} to ${show(to, mode)}`
    }
  }
}
