import { href } from '../../router'
import { formatBytes, formatDate } from '../../ui'
import type { Entry, Operation } from './dialogs'
import { FileIcon, kindOf, previewable } from './icons'
import { type MenuItem, RowMenu } from './row-menu'

export type SortField = 'path' | 'size' | 'modified_at_datetime'
export interface Sort {
  field: SortField
  dir: 'asc' | 'desc'
}

/** A short type for the listing: `PDF file`, from the name's extension. */
function typeOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot > 0 && dot < name.length - 1 ? `${name.slice(dot + 1).toUpperCase()} file` : 'File'
}

export const relative = (folder: string, path: string) =>
  folder === '' ? path : path.slice(folder.length + 1)

export function SortHeader({
  label,
  field,
  sort,
  onSort,
  num,
}: {
  label: string
  field: SortField
  sort: Sort
  onSort: (f: SortField) => void
  num?: boolean
}) {
  const active = sort.field === field
  return (
    <th
      scope="col"
      class={num ? 'num' : undefined}
      aria-sort={active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : undefined}
    >
      <button type="button" class="sort" onClick={() => onSort(field)}>
        {label}
        <span aria-hidden="true">{active ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
        <span class="visually-hidden">
          {active ? `, sorted ${sort.dir === 'asc' ? 'ascending' : 'descending'}` : ''}
        </span>
      </button>
    </th>
  )
}

export type RowAction = Operation | 'download' | 'preview' | 'share' | 'receive'

export function Row({
  entry: e,
  shown,
  canWriteHere,
  canShare,
  selected,
  onSelect,
  onAction,
}: {
  entry: Entry
  shown: string
  canWriteHere: boolean
  /** The user may create share links. */
  canShare: boolean
  selected: boolean
  /** The checkbox was clicked; with Shift, the range from the last one clicked. */
  onSelect: (range: boolean) => void
  onAction: (a: RowAction) => void
}) {
  const isDir = e.type === 'directory'
  const canDelete = e.permissions.includes('d')
  const canRead = e.permissions.includes('r')
  const canWrite = e.permissions.includes('w')
  const name = e.display_name
  const kind = kindOf(e)
  const canPreview = !isDir && canRead && previewable(kind)
  const items: MenuItem[] = []
  const add = (label: string, a: RowAction, danger?: boolean) =>
    items.push({ label, run: () => onAction(a), ...(danger ? { danger } : {}) })
  if (canPreview) add('Preview', 'preview')
  if (!isDir && canRead) add('Download', 'download')
  if (canRead && canShare) add('Share', 'share')
  if (isDir && canWrite && canShare) add('Receive files', 'receive')
  if (canDelete) add('Rename', 'rename')
  if (canDelete) add('Move', 'move')
  if (canRead && canWriteHere) add('Copy', 'copy')
  if (canDelete) add('Delete', 'delete', true)
  return (
    <tr class={selected ? 'selected' : undefined} aria-selected={selected}>
      <td class="pick">
        <input
          type="checkbox"
          aria-label={`Select ${name}`}
          checked={selected}
          // The click has toggled the box already; the selection (and Shift for a range) follows it.
          onClick={(ev) => onSelect(ev.shiftKey)}
        />
      </td>
      <td class="name">
        {isDir ? (
          <a href={href('files', e.path)}>
            <FileIcon kind={kind} />
            {shown}
          </a>
        ) : canPreview ? (
          <button type="button" class="link" onClick={() => onAction('preview')}>
            <FileIcon kind={kind} />
            {shown}
          </button>
        ) : (
          <span>
            <FileIcon kind={kind} />
            {shown}
          </span>
        )}
      </td>
      <td class="num">{isDir ? '' : formatBytes(e.size)}</td>
      <td class="when">{formatDate(e.mtime)}</td>
      <td class="col-type">{isDir ? 'Folder' : typeOf(e.display_name)}</td>
      <td class="menu-cell">
        <RowMenu name={name} items={items} />
      </td>
    </tr>
  )
}
