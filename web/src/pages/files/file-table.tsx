import { href } from '../../router'
import { formatBytes, formatDate } from '../../ui'
import type { Entry, Operation } from './dialogs'

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

export function Row({
  entry: e,
  shown,
  canWriteHere,
  onOp,
  onDownload,
}: {
  entry: Entry
  shown: string
  canWriteHere: boolean
  onOp: (op: Operation) => void
  onDownload: () => void
}) {
  const isDir = e.type === 'directory'
  const canDelete = e.permissions.includes('d')
  const canRead = e.permissions.includes('r')
  const name = e.display_name
  return (
    <tr>
      <td class="name">
        {isDir ? (
          <a href={href('files', e.path)}>
            <span aria-hidden="true" class="folder-icon" />
            {shown}
          </a>
        ) : (
          <span>{shown}</span>
        )}
      </td>
      <td class="num">{isDir ? '' : formatBytes(e.size)}</td>
      <td class="when">{formatDate(e.mtime)}</td>
      <td class="col-type">{isDir ? 'Folder' : typeOf(e.display_name)}</td>
      <td>
        <div class="row-actions">
          {!isDir && canRead ? (
            <button type="button" class="secondary" aria-label={`Download ${name}`} onClick={onDownload}>
              Download
            </button>
          ) : null}
          {canDelete ? (
            <button
              type="button"
              class="secondary"
              aria-label={`Rename ${name}`}
              onClick={() => onOp('rename')}
            >
              Rename
            </button>
          ) : null}
          {canDelete ? (
            <button type="button" class="secondary" aria-label={`Move ${name}`} onClick={() => onOp('move')}>
              Move
            </button>
          ) : null}
          {canRead && canWriteHere ? (
            <button type="button" class="secondary" aria-label={`Copy ${name}`} onClick={() => onOp('copy')}>
              Copy
            </button>
          ) : null}
          {canDelete ? (
            <button type="button" class="danger" aria-label={`Delete ${name}`} onClick={() => onOp('delete')}>
              Delete
            </button>
          ) : null}
        </div>
      </td>
    </tr>
  )
}
