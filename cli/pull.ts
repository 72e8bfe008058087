import { formatBytes } from '../gguf/inspect'
import { defaultDataDir } from '../host/host'
import { hubConfigFromEnv } from '../host/hub/hub-config'
import type { HubDownloadProgress } from '../host/hub/hub-download'
import { parseModelRef, pullModel } from '../host/hub/pull'
import { NeuronError } from '../protocol'
import { parseCommandArgs } from './args'
import type { Command } from './command'

export const pullCommand: Command = {
  name: 'pull',
  usage: `Usage: neuron pull <owner/name>[:<quant>] [--file F] [--data-dir D]

Downloads a GGUF model from Hugging Face, checks it against the Hub's sha256 and packs it for
publishing. Without a quantization it takes Q4_K_M, else the repository's first model; a split
model (…-00001-of-0000N.gguf) is fetched whole. A cut download resumes where it stopped: run the
same command again. Then: neuron publish <the printed directory> --tracker URL.

  --file F       a file of the repository instead of a quantization (for a split model, any part)
  --data-dir D   where downloads and packs go (default ~/.neuron): D/hub/<owner>/<name>, D/published/<id>

Environment, as huggingface_hub reads it:
  HF_ENDPOINT    a Hub mirror (default https://huggingface.co)
  HF_TOKEN       an access token, for gated and private models (else the file huggingface-cli login saves)

Example: neuron pull TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF:Q4_K_M`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      file: { type: 'string' },
      'data-dir': { type: 'string' },
    })
    const [given, ...extra] = positionals
    if (given === undefined || extra.length > 0)
      throw new NeuronError('bad_option', 'pull takes one model, owner/name[:quant]. See neuron pull --help.')
    const ref = parseModelRef(given)
    const config = await hubConfigFromEnv()
    const controller = new AbortController()
    const stop = () => controller.abort(new NeuronError('interrupted', 'stopped; run the same command to resume'))
    process.once('SIGINT', stop)
    const show = progressPrinter()
    try {
      const pulled = await pullModel({
        ref,
        ...(values.file === undefined ? {} : { file: values.file }),
        dataDir: values['data-dir'] ?? defaultDataDir(),
        config,
        onProgress: show,
        log: (line) => console.log(line),
        signal: controller.signal,
      })
      show.end()
      console.log(
        `pulled ${pulled.repo}: ${pulled.model.name}, model id ${pulled.modelId}, packed in ${pulled.packDir}`,
      )
      console.log(`publish it: neuron publish ${pulled.packDir} --tracker URL`)
      return 0
    } finally {
      process.off('SIGINT', stop)
    }
  },
}

/** One progress line: redrawn in place on a terminal, a line per tenth otherwise (logs, CI). */
function progressPrinter(): ((p: HubDownloadProgress & { part: number; parts: number }) => void) & { end(): void } {
  let lastTenth = -1
  let drawn = false
  const print = (p: HubDownloadProgress & { part: number; parts: number }) => {
    const share = p.totalBytes === 0 ? 1 : p.downloadedBytes / p.totalBytes
    const left = p.secondsLeft === null ? '' : `, ${formatSeconds(p.secondsLeft)} left`
    const line =
      `${p.parts > 1 ? `part ${p.part}/${p.parts} ` : ''}${p.file}: ${(share * 100).toFixed(1)}% of ` +
      `${formatBytes(p.totalBytes)} at ${formatBytes(p.bytesPerSecond)}/s${left}`
    if (process.stdout.isTTY) {
      process.stdout.write(`\r${line.padEnd(100).slice(0, 100)}`)
      drawn = true
    } else if (Math.floor(share * 10) > lastTenth || share === 1) {
      lastTenth = Math.floor(share * 10)
      console.log(line)
    }
  }
  return Object.assign(print, {
    end() {
      if (drawn) process.stdout.write('\n')
    },
  })
}

function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`
}
