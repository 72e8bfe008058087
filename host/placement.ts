import { type BlockRange, callRpc, HostToTracker, NeuronError, type RpcSocket } from '../protocol'

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
