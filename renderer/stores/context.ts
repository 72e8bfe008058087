import { createContext, useContext } from 'react'
import type { Stores } from './index'

export const StoresContext = createContext<Stores | null>(null)

export function useStores(): Stores {
  const stores = useContext(StoresContext)
  if (stores === null) throw new Error('useStores needs <StoresContext.Provider> around the app (see main.tsx)')
  return stores
}
