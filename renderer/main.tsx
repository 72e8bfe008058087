import './zodConfig'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App'
import { connectBridge } from './api/bridge'
import { StoresContext } from './stores/context'
import { createStores } from './stores/index'
import './styles/index.css'

const root = document.getElementById('root')
if (root === null) throw new Error('index.html has no #root element for the app')

const bridge = connectBridge()
const stores = createStores(bridge)

createRoot(root).render(
  <StrictMode>
    <StoresContext.Provider value={stores}>
      <App problem={bridge.problem} />
    </StoresContext.Provider>
  </StrictMode>,
)
