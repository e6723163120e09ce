import type { Entry } from './dialogs'

export type Kind = 'folder' | 'image' | 'pdf' | 'text' | 'archive' | 'audio' | 'video' | 'other'

const BY_EXTENSION: Record<string, Kind> = {
  png: 'image',
  jpg: 'image',
  jpeg: 'image',
  gif: 'image',
  webp: 'image',
  svg: 'image',
  bmp: 'image',
  avif: 'image',
  ico: 'image',
  pdf: 'pdf',
  txt: 'text',
  md: 'text',
  csv: 'text',
  log: 'text',
  json: 'text',
  xml: 'text',
  yaml: 'text',
  yml: 'text',
  ini: 'text',
  js: 'text',
  ts: 'text',
  html: 'text',
  css: 'text',
  py: 'text',
  sh: 'text',
  tsv: 'text',
  zip: 'archive',
  gz: 'archive',
  tgz: 'archive',
  tar: 'archive',
  bz2: 'archive',
  xz: 'archive',
  '7z': 'archive',
  rar: 'archive',
  zst: 'archive',
  mp3: 'audio',
  wav: 'audio',
  flac: 'audio',
  ogg: 'audio',
  m4a: 'audio',
  aac: 'audio',
  opus: 'audio',
  mp4: 'video',
  mov: 'video',
  mkv: 'video',
  webm: 'video',
  avi: 'video',
  m4v: 'video',
}

/** The kind of an entry, from its type, its MIME type when the server knows it, and its extension. */
export function kindOf(e: Pick<Entry, 'type' | 'display_name' | 'mime_type'>): Kind {
  if (e.type === 'directory') return 'folder'
  const dot = e.display_name.lastIndexOf('.')
  const ext = dot > 0 ? e.display_name.slice(dot + 1).toLowerCase() : ''
  const byExt = BY_EXTENSION[ext]
  if (byExt) return byExt
  const mime = e.mime_type ?? ''
  if (mime.startsWith('image/')) return 'image'
  if (mime === 'application/pdf') return 'pdf'
  if (mime.startsWith('text/')) return 'text'
  if (mime.startsWith('audio/')) return 'audio'
  if (mime.startsWith('video/')) return 'video'
  return 'other'
}

/** Kinds the preview shows. */
export const previewable = (k: Kind) => k === 'image' || k === 'pdf' || k === 'text'

// One 24×24 outline per kind, drawn in the text colour (no icon font to download).
const SHAPES: Record<Kind, string> = {
  folder:
    'M3 6.5A1.5 1.5 0 0 1 4.5 5h4l2 2h9A1.5 1.5 0 0 1 21 8.5v9a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 17.5z',
  image: 'M4 5h16v14H4zM4 16l5-5 4 4 3-3 4 4M15.5 9.5a1 1 0 1 0 0-.01',
  pdf: 'M6 3h9l4 4v14H6zM15 3v4h4M8.5 16h7M8.5 12.5h7',
  text: 'M6 3h9l4 4v14H6zM15 3v4h4M9 11h6M9 14h6M9 17h4',
  archive: 'M6 3h9l4 4v14H6zM15 3v4h4M11 5h2M11 8h2M11 11h2M10.5 14h3v3h-3z',
  audio:
    'M9 17V6l10-2v11M9 17a2.5 2.5 0 1 1-5 0 2.5 2.5 0 0 1 5 0zM19 15a2.5 2.5 0 1 1-5 0 2.5 2.5 0 0 1 5 0z',
  video: 'M3 6h13v12H3zM16 10l5-3v10l-5-3',
  other: 'M6 3h9l4 4v14H6zM15 3v4h4',
}

export function FileIcon({ kind }: { kind: Kind }) {
  return (
    <svg
      class={`file-icon kind-${kind}`}
      viewBox="0 0 24 24"
      width="20"
      height="20"
      aria-hidden="true"
      focusable="false"
    >
      <path
        d={SHAPES[kind]}
        fill="none"
        stroke="currentColor"
        stroke-width="1.6"
        stroke-linejoin="round"
        stroke-linecap="round"
      />
    </svg>
  )
}
