import { useState } from 'preact/hooks'
import type { Me } from '../api'
import type { Route } from '../router'
import { PageTitle } from '../ui'
import { Folder } from './files/folder'
import { Breadcrumbs } from './files/folder-tools'
import { useUploads } from './files/uploads'
import './files.css'

/**
 * Browsing, uploading, downloading and changing files: a client of the public file API, whose
 * `permissions` letters decide which controls are offered (and whose refusals are shown in words).
 */
export function FilesPage({ route, me }: { route: Route; me: Me }) {
  const folder = route.rest
  // Bumped when an upload into a folder is stored, so its listing refreshes.
  const [stored, setStored] = useState<{ folder: string; n: number }>({ folder: '', n: 0 })
  const uploads = useUploads((f) => setStored((s) => ({ folder: f, n: s.n + 1 })))
  const refresh = stored.folder.toLowerCase() === folder.toLowerCase() ? stored.n : 0
  return (
    <section>
      <PageTitle>Files</PageTitle>
      <Breadcrumbs folder={folder} />
      <Folder key={folder.toLowerCase()} folder={folder} me={me} refresh={refresh} uploads={uploads} />
    </section>
  )
}
