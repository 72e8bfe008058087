import { createStore } from 'zustand/vanilla'
import type { NeuronBridge } from '../../../protocol/app'
import { shownError } from '../../api/errorText'
import { type HubState, initialHubState } from './initialState'
import { downloading } from './selectors'

export interface HubActions {
  setQuery(query: string): void
  search(): Promise<void>
  openRepo(repo: string): Promise<void>
  /** Starts downloading a model; it is published from this computer once complete. */
  download(name: string): Promise<void>
  dismiss(repo: string, name: string): Promise<void>
  loadDownloads(): Promise<void>
  /** Follows the downloads every second while any runs; returns the stop. */
  follow(onReady: (modelId: string) => void): () => void
}
export type HubStore = HubState & HubActions

export function createHubStore(bridge: NeuronBridge) {
  return createStore<HubStore>()((set, get) => ({
    ...initialHubState,
    setQuery(query) {
      set({ query })
    },
    async search() {
      const query = get().query.trim()
      if (query === '')
        return set({ error: { code: 'bad_request', message: 'Type part of a model’s name to search.' } })
      set({ searching: true, error: null, repo: null, models: null })
      try {
        set({ hits: (await bridge.call('hub.search', { query })).hits, searching: false })
      } catch (error) {
        set({ error: shownError(error), searching: false })
      }
    },
    async openRepo(repo) {
      set({ repo, models: null, loadingModels: true, error: null })
      try {
        const answer = await bridge.call('hub.models', { repo })
        if (get().repo === repo) set({ models: answer.models, gated: answer.gated, loadingModels: false })
      } catch (error) {
        if (get().repo === repo) set({ error: shownError(error), loadingModels: false })
      }
    },
    async download(name) {
      const { repo } = get()
      if (repo === null) return
      set({ error: null })
      try {
        set({ downloads: (await bridge.call('hub.download', { repo, name })).downloads })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    async dismiss(repo, name) {
      try {
        set({ downloads: (await bridge.call('hub.dismiss', { repo, name })).downloads })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    async loadDownloads() {
      try {
        set({ downloads: (await bridge.call('hub.downloads', {})).downloads })
      } catch (error) {
        set({ error: shownError(error) })
      }
    },
    follow(onReady) {
      const announced = new Set<string>()
      const tick = async () => {
        await get().loadDownloads()
        for (const d of get().downloads) {
          const key = `${d.repo}\0${d.name}`
          if (d.phase === 'ready' && d.modelId !== null && !announced.has(key)) {
            announced.add(key)
            onReady(d.modelId)
          }
        }
      }
      // Downloads that were ready before this screen opened are not news.
      for (const d of get().downloads) if (d.phase === 'ready') announced.add(`${d.repo}\0${d.name}`)
      void tick()
      const timer = setInterval(() => {
        if (downloading(get().downloads)) void tick()
      }, 1000)
      return () => clearInterval(timer)
    },
  }))
}
