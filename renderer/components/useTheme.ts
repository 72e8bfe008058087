import { useEffect } from 'react'
import type { Theme } from '../stores/appearance/initialState'
import { resolvedTheme } from '../stores/appearance/selectors'
import { useMediaQuery } from './useMediaQuery'

/** Draws `theme` (the system's, followed as it changes, when 'system'): the root's data-theme picks the colours. */
export function useTheme(theme: Theme): void {
  const systemDark = useMediaQuery('(prefers-color-scheme: dark)')
  useEffect(() => {
    document.documentElement.dataset.theme = resolvedTheme(theme, systemDark)
  }, [theme, systemDark])
}
