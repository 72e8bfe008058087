import { Check } from 'lucide-react'
import { useEffect } from 'react'
import { useStore } from 'zustand'
import { ErrorNote } from '../components/ErrorNote'
import { Loading } from '../components/Loading'
import { Panel } from '../components/Panel'
import { ScreenHeader } from '../components/ScreenHeader'
import { useNow } from '../components/useNow'
import { useStores } from '../stores/context'
import type { SettingsSection } from '../stores/settings/initialState'
import { identityFileName, savedMessage, showsSaved } from '../stores/settings/selectors'
import { AccessSection } from './settings/AccessSection'
import { IdentitySection } from './settings/IdentitySection'
import { LanSection } from './settings/LanSection'
import { LimitsSection } from './settings/LimitsSection'
import { TrackerSection } from './settings/TrackerSection'

/** Saves the PEM through a Blob link: works the same in Electron and in a browser. */
function download(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/x-pem-file' }))
  const link = document.createElement('a')
  link.href = url
  link.download = fileName
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 1_000)
}

/**
 * The transient "Limits saved" note, pinned to the window's corner so it shows wherever the section saved is
 * scrolled; the live region stays mounted so screen readers announce the note as it appears. It alone ticks,
 * so the forms do not re-render twice a second.
 */
function SavedNote({ savedAt, section }: { savedAt: number | null; section: SettingsSection | null }) {
  const now = useNow(500)
  return (
    <div className="saved-region" role="status" aria-live="polite">
      {showsSaved(savedAt, now) && (
        <span className="saved" data-testid="settings-saved">
          <Check size={16} aria-hidden /> {savedMessage(section)}
        </span>
      )}
    </div>
  )
}

export function SettingsScreen() {
  const { settings: store, hosting, computer } = useStores()
  const cpu = useStore(computer, (s) => s.view?.profile.cpu ?? null)
  // The threads field's hint is this computer's core count: the Computer view has it.
  useEffect(() => {
    if (computer.getState().view === null) void computer.getState().load()
  }, [computer])
  const state = useStore(store)
  const hostingStatus = useStore(hosting, (s) => s.status)
  const { settings } = state

  return (
    <div className="screen" data-testid="screen-settings">
      <ScreenHeader
        title="Settings"
        subtitle="Where this app connects, who it is, and how much of this computer it may use."
      />
      <SavedNote savedAt={state.savedAt} section={state.savedSection} />
      <ErrorNote error={state.loadError} />
      <ErrorNote
        error={settings?.notice ? { code: 'settings_kept_aside', message: settings.notice } : null}
        testId="settings-notice"
      />
      {settings === null ? (
        <Loading text="Loading settings…" />
      ) : (
        <div className="settings-grid">
          <TrackerSection
            key={`tracker-${settings.trackerUrl}`}
            settings={settings}
            saving={state.saving === 'tracker'}
            error={state.trackerError}
            hosting={hostingStatus}
            onSave={(text, hostingOnSwitch) => void state.saveTracker(text, hostingOnSwitch)}
            onCheck={(text) => state.checkTracker(text)}
          />
          <Panel title="Data">
            <div className="field-label">Data folder</div>
            <div className="mono path" data-testid="settings-data-dir">
              {settings.dataDir}
            </div>
            <p className="muted small">Keys, downloaded artifacts, the hardware cache and these settings live here.</p>
          </Panel>
          <IdentitySection
            settings={settings}
            saving={state.saving === 'identity'}
            error={state.identityError}
            hostingPhase={hostingStatus?.phase ?? null}
            onExport={async () => {
              const exported = await state.exportIdentity()
              if (exported !== null) download(identityFileName(settings), exported.pem)
            }}
            onImport={(pem) => void state.importIdentity(pem)}
          />
          <AccessSection
            key={`access-${(settings.allowedKeys ?? []).join(',')}`}
            settings={settings}
            saving={state.saving === 'access'}
            error={state.accessError}
            onSave={(text) => void state.saveAllowedKeys(text)}
          />
          <LanSection
            settings={settings}
            saving={state.saving === 'lan'}
            error={state.lanError}
            onChange={(open) => void state.saveLanOpen(open)}
          />
          <LimitsSection
            key={JSON.stringify(settings.limits)}
            limits={settings.limits}
            saving={state.saving === 'limits'}
            error={state.limitsError}
            fieldErrors={state.limitFieldErrors}
            cores={cpu === null ? null : { physical: cpu.physicalCores, logical: cpu.cores }}
            onSave={(form) => void state.saveLimits(form)}
          />
        </div>
      )}
    </div>
  )
}
