import { Monitor, Moon, PanelLeftClose, PanelLeftOpen, Sun } from 'lucide-react'
import type { ReactNode } from 'react'
import { SCREENS, type ScreenId } from '../screens/registry'
import type { Theme } from '../stores/appearance/initialState'
import { themeLabel } from '../stores/appearance/selectors'
import { isMac, SCREEN_SHORTCUTS } from './shortcuts'

const THEME_ICON = { system: Monitor, light: Sun, dark: Moon } as const

interface SidebarProps {
  current: ScreenId
  onSelect(id: ScreenId): void
  footer: ReactNode
  /** Icons only: chosen, or a mid-width window. */
  rail: boolean
  /** The window is wide enough for the whole sidebar: the collapse button is offered. */
  canExpand: boolean
  onToggleCollapse(): void
  theme: Theme
  onTheme(): void
}

export function Sidebar({
  current,
  onSelect,
  footer,
  rail,
  canExpand,
  onToggleCollapse,
  theme,
  onTheme,
}: SidebarProps) {
  const ThemeIcon = THEME_ICON[theme]
  return (
    <nav className="sidebar" aria-label="Screens" id="sidebar">
      <div className="brand">
        <img src="./neuron.svg" alt="" width={28} height={28} />
        <span>Neuron</span>
      </div>
      <ul>
        {SCREENS.map((screen, i) => {
          const key = `${isMac ? '⌘' : 'Ctrl+'}${i + 1}`
          return (
            <li key={screen.id}>
              <button
                type="button"
                className={`nav-item ${screen.id === current ? 'active' : ''}`}
                onClick={() => onSelect(screen.id)}
                aria-current={screen.id === current ? 'page' : undefined}
                data-testid={`nav-${screen.id}`}
                title={SCREEN_SHORTCUTS ? `${screen.label} (${key})` : screen.label}
              >
                <screen.icon size={18} aria-hidden />
                <span>{screen.label}</span>
                {SCREEN_SHORTCUTS && <kbd>{key}</kbd>}
              </button>
            </li>
          )
        })}
      </ul>
      <div className="sidebar-footer">
        {footer}
        <div className="sidebar-tools">
          <button
            type="button"
            className="icon-button"
            onClick={onTheme}
            title={themeLabel(theme)}
            aria-label={themeLabel(theme)}
            data-testid="theme-toggle"
            data-theme-choice={theme}
          >
            <ThemeIcon size={16} aria-hidden />
          </button>
          {canExpand && (
            <button
              type="button"
              className="icon-button"
              onClick={onToggleCollapse}
              title={rail ? 'Show the sidebar' : 'Fold the sidebar to icons'}
              aria-label={rail ? 'Show the sidebar' : 'Fold the sidebar to icons'}
              aria-expanded={!rail}
              data-testid="sidebar-collapse"
            >
              {rail ? <PanelLeftOpen size={16} aria-hidden /> : <PanelLeftClose size={16} aria-hidden />}
            </button>
          )}
        </div>
      </div>
    </nav>
  )
}
