import { useCallback, useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { ConnectingScreen } from './components/ConnectingScreen'
import { Sidebar } from './components/Sidebar'
import { StatusLine } from './components/StatusLine'
import { SCREENS, type ScreenId, screenFromHash } from './screens/registry'
import { catchUpOnReconnect } from './stores/connection/catchUp'
import { useStores } from './stores/context'
import { refreshOnChanges } from './stores/refresh'

export function App({ problem }: { problem?: string }) {
  const stores = useStores()
  const connection = useStore(stores.connection, (s) => s.state)
  const ready = useStore(stores.settings, (s) => s.settings !== null)
  const loadError = useStore(stores.settings, (s) => s.loadError)
  const [screen, setScreen] = useState<ScreenId>(() => screenFromHash(location.hash))

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

  const go = useCallback((id: ScreenId) => {
    setScreen(id)
    history.replaceState(null, '', `#/${id}`)
  }, [])

  useEffect(() => {
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
  return (
    <div className="app" data-testid="app-ready">
      <Sidebar current={screen} onSelect={go} footer={<StatusLine />} />
      <main className="content">{entry !== undefined && <entry.Screen key={entry.id} />}</main>
    </div>
  )
}
