import { Download } from 'lucide-react'
import { conversationJson, conversationMarkdown, exportFileName } from '../../stores/chat/export'
import type { Conversation } from '../../stores/chat/initialState'

/** Saves the conversation as a file the browser downloads. */
function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const link = document.createElement('a')
  link.href = url
  link.download = name
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 0)
}

/** The formats a conversation exports to: file extension, MIME type, button label, and how to write it. */
const FORMATS = [
  { ext: 'md', type: 'text/markdown', label: 'Markdown', write: conversationMarkdown },
  { ext: 'json', type: 'application/json', label: 'JSON', write: conversationJson },
] as const

export function ExportMenu({ conversation }: { conversation: Conversation }) {
  return (
    <div className="export-menu">
      <span className="field-label">Export</span>
      <div className="export-buttons">
        {FORMATS.map(({ ext, type, label, write }) => (
          <button
            key={ext}
            type="button"
            className="button"
            onClick={() => download(exportFileName(conversation, ext), type, write(conversation))}
            data-testid={`chat-export-${ext}`}
            title={`Download this conversation as ${label}`}
          >
            <Download size={14} aria-hidden /> {label}
          </button>
        ))}
      </div>
    </div>
  )
}
