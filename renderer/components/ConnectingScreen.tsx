import { LoaderCircle } from 'lucide-react'
import type { ShownError } from '../api/errorText'

/** Shown until the first settings.get answers: the app is useless without its backend, so say what it waits for. */
export function ConnectingScreen({
  reconnecting,
  error,
  problem,
}: {
  reconnecting: boolean
  error: ShownError | null
  problem?: string
}) {
  return (
    <div className="connecting" data-testid="app-connecting">
      <img src="./neuron.svg" alt="" width={56} height={56} />
      <h1>Neuron</h1>
      <p className="connecting-state">
        <LoaderCircle className="spin" size={18} aria-hidden />{' '}
        {reconnecting ? 'Connecting to the Neuron host… (retrying)' : 'Connecting to the Neuron host…'}
      </p>
      <p className="muted small">
        The app talks to the Neuron host running on this computer. If this takes long, start it with{' '}
        <code>neuron app</code>.
      </p>
      {problem !== undefined && <p className="muted small">This window cannot reach it: {problem}</p>}
      {error !== null && <p className="muted small">Last error: {error.message}</p>}
    </div>
  )
}
