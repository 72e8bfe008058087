import {
  Coins,
  Cpu,
  KeySquare,
  type LucideIcon,
  MessageSquare,
  Network,
  ScrollText,
  Server,
  Settings,
  ShieldCheck,
} from 'lucide-react'
import type { ComponentType } from 'react'
import { ApiScreen } from './ApiScreen'
import { ChatScreen } from './ChatScreen'
import { ComputerScreen } from './ComputerScreen'
import { EarningsScreen } from './EarningsScreen'
import { HostScreen } from './HostScreen'
import { LogScreen } from './LogScreen'
import { ReputationScreen } from './ReputationScreen'
import { SettingsScreen } from './SettingsScreen'
import { SwarmScreen } from './SwarmScreen'

export interface ScreenEntry {
  /** Used in nav-<id>, in the URL hash, and in the order of Ctrl/Cmd+1..9 (the desktop app's). */
  id: 'computer' | 'host' | 'earnings' | 'reputation' | 'chat' | 'swarm' | 'api' | 'settings' | 'log'
  label: string
  icon: LucideIcon
  Screen: ComponentType
}

export const SCREENS: readonly ScreenEntry[] = [
  { id: 'computer', label: 'This computer', icon: Cpu, Screen: ComputerScreen },
  { id: 'host', label: 'Host a model', icon: Server, Screen: HostScreen },
  { id: 'earnings', label: 'Earnings', icon: Coins, Screen: EarningsScreen },
  { id: 'reputation', label: 'Reputation', icon: ShieldCheck, Screen: ReputationScreen },
  { id: 'chat', label: 'Chat', icon: MessageSquare, Screen: ChatScreen },
  { id: 'swarm', label: 'Swarm', icon: Network, Screen: SwarmScreen },
  { id: 'api', label: 'API', icon: KeySquare, Screen: ApiScreen },
  { id: 'settings', label: 'Settings', icon: Settings, Screen: SettingsScreen },
  { id: 'log', label: 'Log', icon: ScrollText, Screen: LogScreen },
]

export type ScreenId = ScreenEntry['id']

export function screenFromHash(hash: string): ScreenId {
  const id = hash.replace(/^#\/?/, '')
  return SCREENS.find((s) => s.id === id)?.id ?? 'computer'
}
