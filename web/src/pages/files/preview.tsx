import { useEffect, useState } from 'preact/hooks'
import { encodePath, get } from '../../api'
import { Modal } from '../../components/modal'
import { ErrorBox, formatBytes, Loading } from '../../ui'
import type { Entry } from './dialogs'
import { type Kind, kindOf } from './icons'

/** How much of a text file the preview shows. */
export const TEXT_PREVIEW_BYTES = 256 * 1024

type Shown = { kind: 'image' | 'pdf'; url: string } | { kind: 'text'; text: string; cut: boolean }

/**
 * Fetches what the preview shows through the file's signed download link: an image or a PDF as a
 * blob the page may show under its policy, a text file's first 256 KiB only (a Range request).
 */
async function load(entry: Entry, kind: Kind, signal: AbortSignal): Promise<Shown> {
  const f = await get<Entry & { download_uri: string }>(`/files/${encodePath(entry.path)}`)
  const headers: Record<string, string> =
    kind === 'text' ? { Range: `bytes=0-${TEXT_PREVIEW_BYTES - 1}` } : {}
  const res = await fetch(f.download_uri, { headers, signal, credentials: 'omit' })
  if (!res.ok) throw new Error(`The file could not be read: the server answered ${res.status}`)
  if (kind === 'text') {
    const buf = new Uint8Array(await res.arrayBuffer()).slice(0, TEXT_PREVIEW_BYTES)
    return { kind, text: new TextDecoder().decode(buf), cut: entry.size > TEXT_PREVIEW_BYTES }
  }
  const blob = await res.blob()
  const type = kind === 'pdf' ? 'application/pdf' : blob.type || entry.mime_type || ''
  return { kind: kind === 'pdf' ? 'pdf' : 'image', url: URL.createObjectURL(new Blob([blob], { type })) }
}

/** A modal preview of an image, a PDF or the start of a text file, with a download button. */
export function PreviewDialog({
  entry,
  onClose,
  onDownload,
}: {
  entry: Entry
  onClose: () => void
  onDownload: () => void
}) {
  const kind = kindOf(entry)
  const [shown, setShown] = useState<Shown | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    const ctl = new AbortController()
    let url: string | null = null
    load(entry, kind, ctl.signal).then(
      (s) => {
        if ('url' in s) url = s.url
        setShown(s)
      },
      (err) => ctl.signal.aborted || setError(err),
    )
    return () => {
      ctl.abort()
      if (url) URL.revokeObjectURL(url)
    }
  }, [entry.path])

  return (
    <Modal labelledBy="preview-title" class="preview-dialog" onClose={onClose}>
      <div class="preview-head">
        <h2 id="preview-title">{entry.display_name}</h2>
        <span class="muted">{formatBytes(entry.size)}</span>
      </div>
      <div class="preview-body">
        <ErrorBox error={error} />
        {!shown && !error ? <Loading /> : null}
        {shown?.kind === 'image' ? <img src={shown.url} alt={`Preview of ${entry.display_name}`} /> : null}
        {shown?.kind === 'pdf' ? <iframe src={shown.url} title={`Preview of ${entry.display_name}`} /> : null}
        {shown?.kind === 'text' ? (
          <>
            <pre data-testid="text-preview">{shown.text}</pre>
            {shown.cut ? (
              <p class="muted">Only the first {formatBytes(TEXT_PREVIEW_BYTES)} are shown.</p>
            ) : null}
          </>
        ) : null}
      </div>
      <div class="actions">
        <button type="button" class="secondary" onClick={onDownload}>
          Download
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </Modal>
  )
}
