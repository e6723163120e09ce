/**
 * The messages share links cause: plain text, with a simple HTML alternative in which everything a
 * user or a visitor gave is escaped. Subjects are one line (line breaks become spaces).
 */

export interface MailText {
  subject: string
  text: string
  html: string
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

const oneLine = (s: string) => s.replace(/[\r\n\t]+/g, ' ').trim()

/** Paragraphs of the HTML part: escaped, line breaks kept. */
const para = (s: string) => `<p>${escapeHtml(s).replace(/\r?\n/g, '<br>')}</p>`

const page = (body: string[]) =>
  `<!DOCTYPE html>\n<html><body style="font-family: sans-serif">\n${body.join('\n')}\n</body></html>\n`

/**
 * The link sent to a recipient: who shares it, their note, the URL. A write-only link (an inbox)
 * asks for files rather than sharing them.
 */
export function shareMail(input: {
  sender: string
  note: string | null
  url: string
  site: string
  /** The link takes uploads only. */
  asksForFiles?: boolean
}): MailText {
  const sender = oneLine(input.sender)
  const what = input.asksForFiles ? 'has asked you to send files' : 'has shared files with you'
  const text = [`${sender} ${what}.`, '']
  const html = [para(`${sender} ${what}.`)]
  if (input.note) {
    text.push(`${sender} wrote:`, '', input.note, '')
    html.push(para(`${sender} wrote:`), `<blockquote>${para(input.note)}</blockquote>`)
  }
  text.push('Open the share link:', input.url, '', `Sent by ${input.site}.`)
  html.push(
    `<p><a href="${escapeHtml(input.url)}">Open the share link</a><br>${escapeHtml(input.url)}</p>`,
    para(`Sent by ${input.site}.`),
  )
  return {
    subject: `${sender} ${what}`,
    text: `${text.join('\n')}\n`,
    html: page(html),
  }
}

/** What a notified user is told when someone registers on, or uploads to, a share link. */
export function notificationMail(input: {
  event: 'registration' | 'upload'
  /** The share link's code, description and URL. */
  code: string
  description: string | null
  url: string
  /** Who registered or uploaded, as they gave it. */
  visitor: { name?: string | null; email?: string | null; company?: string | null; ip?: string | null }
  /** The paths uploaded, for an upload. */
  paths?: string[] | undefined
  site: string
}): MailText {
  const who =
    [
      input.visitor.name,
      input.visitor.email && `<${input.visitor.email}>`,
      input.visitor.company && `(${input.visitor.company})`,
    ]
      .filter((s): s is string => !!s)
      .map(oneLine)
      .join(' ') || 'Someone'
  const link = input.description ? `${oneLine(input.description)} (${input.code})` : input.code
  const what = input.event === 'registration' ? 'registered on' : 'uploaded files to'
  const line = `${who} ${what} the share link ${link}.`
  const text = [line, '']
  const html = [para(line)]
  if (input.paths && input.paths.length > 0) {
    text.push('Files:', ...input.paths.map((p) => `  ${p}`), '')
    html.push(`<ul>${input.paths.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`)
  }
  if (input.visitor.ip) {
    text.push(`From address ${input.visitor.ip}.`, '')
    html.push(para(`From address ${input.visitor.ip}.`))
  }
  text.push('The share link:', input.url, '', `Sent by ${input.site}.`)
  html.push(
    `<p><a href="${escapeHtml(input.url)}">${escapeHtml(input.url)}</a></p>`,
    para(`Sent by ${input.site}.`),
  )
  return {
    subject:
      input.event === 'registration'
        ? `New registration on share link ${link}`
        : `New upload to share link ${link}`,
    text: `${text.join('\n')}\n`,
    html: page(html),
  }
}
