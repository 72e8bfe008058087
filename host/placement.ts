import { type BlockRange, callRpc, HostToTracker, type Manifest, NeuronError, type RpcSocket } from '../protocol'
import type { FetchProgress } from './artifacts/artifact-store'

/** The range the tracker proposes for this host (`--blocks auto`); throws its refusal when it proposes none. */
export async function placedRange(
  socket: RpcSocket,
  modelId: string,
  log: (line: string) => void,
): Promise<BlockRange> {
  const placement = await callRpc(socket, HostToTracker, 'placement.request', { modelId })
  if (placement.proposal === null)
    throw new NeuronError(
      placement.refusal?.code ?? 'not_placed',
      `the tracker proposes no range of ${modelId} for this computer: ` +
        `${placement.refusal?.reason ?? 'no reason given'}`,
    )
  log(
    `placement: blocks [${placement.proposal.blocks[0]}, ${placement.proposal.blocks[1]}), ` +
      `${placement.proposal.bytesToDownload} bytes to fetch`,
  )
  return placement.proposal.blocks
}

/** Per-file fetch progress as one fraction of `files`' bytes, handed to `report` at most every `everyMs`. */
export function overallProgress(
  manifest: Manifest,
  files: readonly string[],
  report: (fraction: number) => void,
  everyMs = 500,
): (p: FetchProgress) => void {
  const total = manifest.artifacts.filter((a) => files.includes(a.file)).reduce((s, a) => s + a.bytes, 0)
  const done = new Map<string, number>()
  let lastReport = 0
  return (p) => {
    done.set(p.file, p.downloadedBytes)
    const now = Date.now()
    if (now - lastReport <= everyMs) return
    lastReport = now
    report(Math.min(1, [...done.values()].reduce((s, b) => s + b, 0) / total))
  }
}
