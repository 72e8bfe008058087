import type { ReactNode } from 'react'
import { SCREENS, type ScreenId } from '../screens/registry'

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform)

export function Sidebar({
  current,
  onSelect,
  footer,
}: {
  current: ScreenId
  onSelect(id: ScreenId): void
  footer: ReactNode
}) {
  return (
    <nav className="sidebar" aria-label="Screens">
      <div className="brand">
        <img src="./neuron.svg" alt="" width={28} height={28} />
        <span>Neuron</span>
      </div>
      <ul>
        {SCREENS.map((screen, i) => (
          <li key={screen.id}>
            <button
              type="button"
              className={`nav-item ${screen.id === current ? 'active' : ''}`}
              onClick={() => onSelect(screen.id)}
              aria-current={screen.id === current ? 'page' : undefined}
              data-testid={`nav-${screen.id}`}
              title={`${screen.label} (${isMac ? '⌘' : 'Ctrl+'}${i + 1})`}
            >
              <screen.icon size={18} aria-hidden />
              <span>{screen.label}</span>
              <kbd>
                {isMac ? '⌘' : 'Ctrl '}
                {i + 1}
              </kbd>
            </button>
          </li>
        ))}
      </ul>
      <div className="sidebar-footer">{footer}</div>
    </nav>
  )
}
