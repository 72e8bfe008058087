// Runs sandboxed in the renderer before the page: it may require only `electron`, so Vite bundles this
// file with protocol/ and zod into dist/electron/preload.cjs (vite.preload.config.ts).
import { contextBridge, ipcRenderer } from 'electron'
import { config } from 'zod'
import { createNeuronBridge } from './bridge'

// zod probes `new Function` to compile fast parsers; the page's CSP forbids eval, so don't ask.
config({ jitless: true })
contextBridge.exposeInMainWorld('neuron', createNeuronBridge(ipcRenderer))
