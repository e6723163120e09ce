// XML 1.0 cannot carry most control characters even escaped: they are dropped, never emitted.
// biome-ignore lint/suspicious/noControlCharactersInRegex: that is the point
const INVALID_XML_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** Text and attribute values in Wharf's XML (the API's and WebDAV's): characters XML cannot carry are dropped. */
export function xmlEscape(s: string): string {
  return s
    .replace(INVALID_XML_CHARS, '')
    .replace(LONE_SURROGATES, '')
    .replace(
      /[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!,
    )
}
