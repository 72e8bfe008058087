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

export function ExportMenu({ conversation }: { conversation: Conversation }) {
  return (
    <div className="export-menu">
      <span className="field-label">Export</span>
      <div className="export-buttons">
        <button
          type="button"
          className="button"
          onClick={() => download(exportFileName(conversation, 'md'), 'text/markdown', conversationMarkdown(conversation))}
          data-testid="chat-export-md"
          title="Download this conversation as Markdown"
        >
          <Download size={14} aria-hidden /> Markdown
        </button>
        <button
          type="button"
          className="button"
          onClick={() => download(exportFileName(conversation, 'json'), 'application/json', conversationJson(conversation))}
          data-testid="chat-export-json"
          title="Download this conversation as JSON"
        >
          <Download size={14} aria-hidden /> JSON
        </button>
      </div>
    </div>
  )
}
