import { useEffect } from 'react'
import { useStore } from 'zustand'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { ScreenHeader } from '../components/ScreenHeader'
import { useStores } from '../stores/context'
import { ReputationReport } from './reputation/ReputationReport'

export function ReputationScreen() {
  const { reputation } = useStores()
  const { view, error } = useStore(reputation)

  useEffect(() => {
    void reputation.getState().load()
  }, [reputation])

  return (
    <div className="screen" data-testid="screen-reputation">
      <ScreenHeader
        title="Reputation"
        subtitle="How the tracker rates and checks this host. A higher score gets more routes and more credits."
      />
      <ErrorNote error={error} />
      {view === null ? error === null && <Loading text="Loading reputation…" /> : <ReputationReport view={view} />}
    </div>
  )
}
