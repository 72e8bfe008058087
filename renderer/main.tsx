import './zodConfig'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App'
import { connectBridge } from './api/bridge'
import { resolvedTheme } from './stores/appearance/selectors'
import { StoresContext } from './stores/context'
import { createStores } from './stores/index'
import './styles/index.css'

const root = document.getElementById('root')
if (root === null) throw new Error('index.html has no #root element for the app')

const bridge = connectBridge()
const stores = createStores(bridge)
// The theme before the first render, so a dark system never flashes light (useTheme follows it from then on).
document.documentElement.dataset.theme = resolvedTheme(
  stores.appearance.getState().theme,
  window.matchMedia('(prefers-color-scheme: dark)').matches,
)

createRoot(root).render(
  <StrictMode>
    <StoresContext.Provider value={stores}>
      <App problem={bridge.problem} />
    </StoresContext.Provider>
  </StrictMode>,
)
