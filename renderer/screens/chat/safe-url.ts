// Which URLs an answer may carry. A model's text is untrusted: a link may only open a web page or a mail
// client (never javascript:, data:, file: or the app's own routes), and nothing is fetched on its own.

const LINK_PROTOCOLS = new Set(['http:', 'https:', 'mailto:'])

/** `url` when it is an absolute http(s) or mailto URL, else '' (rendered as plain text, never a link). */
export function safeLinkUrl(url: string): string {
  try {
    return LINK_PROTOCOLS.has(new URL(url.trim()).protocol) ? url.trim() : ''
  } catch {
    // Relative or malformed: no base to resolve it against that would be right for an answer.
    return ''
  }
}
