import { Menu, X } from 'lucide-react'
import { useCallback, useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { ConnectingScreen } from './components/ConnectingScreen'
import { Sidebar } from './components/Sidebar'
import { StatusLine } from './components/StatusLine'
import { SCREEN_SHORTCUTS } from './components/shortcuts'
import { useMediaQuery } from './components/useMediaQuery'
import { useTheme } from './components/useTheme'
import { SCREENS, type ScreenId, screenFromHash } from './screens/registry'
import { nextTheme } from './stores/appearance/selectors'
import { catchUpOnReconnect } from './stores/connection/catchUp'
import { useStores } from './stores/context'
import { refreshOnChanges } from './stores/refresh'

export function App({ problem }: { problem?: string }) {
  const stores = useStores()
  const connection = useStore(stores.connection, (s) => s.state)
  const ready = useStore(stores.settings, (s) => s.settings !== null)
  const loadError = useStore(stores.settings, (s) => s.loadError)
  const [screen, setScreen] = useState<ScreenId>(() => screenFromHash(location.hash))
  const appearance = useStore(stores.appearance)
  useTheme(appearance.theme)
  // Narrow (a phone-sized window): the sidebar is a drawer behind a menu button. Mid-width: icons only.
  const narrow = useMediaQuery('(max-width: 700px)')
  const mid = useMediaQuery('(max-width: 1000px)')
  const rail = !narrow && (mid || appearance.sidebarCollapsed)

  // Settings are the handshake: load them on every (re)connection, and the conversations the backend keeps.
  useEffect(() => {
    if (connection !== 'open') return
    void stores.settings.getState().load()
    void stores.chat.getState().loadConversations()
    // The status badge shows hosting from the first screen on.
    void stores.hosting.getState().loadStatus()
  }, [connection, stores])

  // Events are followed app-wide so nothing is missed while another screen is shown; after a dropped
  // connection, what was pushed meanwhile is caught up on.
  useEffect(() => {
    const offs = [
      stores.hosting.getState().subscribe(),
      stores.earnings.getState().subscribe(),
      stores.chat.getState().subscribe(),
      catchUpOnReconnect(stores),
      refreshOnChanges(stores),
    ]
    return () => {
      for (const off of offs) off()
    }
  }, [stores])

  useEffect(() => {
    const onHash = () => setScreen(screenFromHash(location.hash))
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [])

  const go = useCallback(
    (id: ScreenId) => {
      setScreen(id)
      stores.appearance.getState().setNavOpen(false)
      history.replaceState(null, '', `#/${id}`)
    },
    [stores],
  )

  useEffect(() => {
    if (!SCREEN_SHORTCUTS) return
    const onKey = (event: KeyboardEvent) => {
      if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return
      const target = SCREENS[Number(event.key) - 1]
      if (target === undefined) return
      event.preventDefault()
      go(target.id)
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [go])

  if (!ready)
    return <ConnectingScreen reconnecting={connection === 'reconnecting'} error={loadError} problem={problem} />
  const entry = SCREENS.find((s) => s.id === screen) ?? SCREENS[0]
  const layout = narrow ? 'layout-narrow' : rail ? 'layout-rail' : 'layout-full'
  const navOpen = narrow && appearance.navOpen
  return (
    <div className={`app ${layout} ${navOpen ? 'nav-open' : ''}`} data-testid="app-ready" data-layout={layout}>
      {narrow && (
        <header className="topbar">
          <button
            type="button"
            className="icon-button"
            onClick={() => appearance.setNavOpen(!navOpen)}
            aria-label={navOpen ? 'Close the menu' : 'Open the menu'}
            aria-expanded={navOpen}
            aria-controls="sidebar"
            data-testid="nav-menu"
          >
            {navOpen ? <X size={18} aria-hidden /> : <Menu size={18} aria-hidden />}
          </button>
          <img src="./neuron.svg" alt="" width={22} height={22} />
          <span className="topbar-title">{entry?.label}</span>
        </header>
      )}
      <Sidebar
        current={screen}
        onSelect={go}
        footer={<StatusLine />}
        rail={rail}
        canExpand={!narrow && !mid}
        onToggleCollapse={appearance.toggleSidebar}
        theme={appearance.theme}
        onTheme={() => appearance.setTheme(nextTheme(appearance.theme))}
      />
      {navOpen && (
        <button
          type="button"
          className="nav-backdrop"
          aria-label="Close the menu"
          onClick={() => appearance.setNavOpen(false)}
        />
      )}
      <main className="content">{entry !== undefined && <entry.Screen key={entry.id} />}</main>
    </div>
  )
}
