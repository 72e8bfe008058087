import type { ComputerView } from '../../../protocol/app'
import { formatBytes, formatGb, formatRate } from '../../format'

export function coresLine(view: ComputerView): string {
  const { cpu } = view.profile
  return `${cpu.physicalCores} cores / ${cpu.cores} threads`
}

export function cpuLine(view: ComputerView): string {
  return `${view.profile.cpu.model} · ${coresLine(view)}`
}

export function memoryLine(view: ComputerView): string {
  const { memory } = view.profile
  return `${formatBytes(memory.totalBytes)} total · ${formatBytes(memory.availableBytes)} available`
}

export function memoryUsedFraction(view: ComputerView): number {
  const { totalBytes, availableBytes } = view.profile.memory
  return totalBytes === 0 ? 0 : Math.min(1, Math.max(0, (totalBytes - availableBytes) / totalBytes))
}

export function gpuLines(view: ComputerView): string[] {
  if (view.profile.gpus.length === 0) return ['No GPU detected']
  return view.profile.gpus.map((gpu) => `${gpu.vendor} ${gpu.model} · ${formatBytes(gpu.vramBytes)} VRAM`)
}

export function diskLine(view: ComputerView): string {
  const { disk } = view.profile
  return `${formatBytes(disk.freeBytes)} free on ${disk.path} · reads at ${formatRate(disk.readBytesPerSecond)}`
}

export function bandwidthLine(view: ComputerView): string {
  return formatRate(view.profile.memoryBytesPerSecond)
}

export function servableLine(view: ComputerView): string {
  return `Can serve about ${formatGb(view.servableBytes)} of layers`
}
