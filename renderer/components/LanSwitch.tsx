interface LanSwitchProps {
  /** The input's id, also its test id. */
  id: string
  label: string
  checked: boolean
  /** The swarm restarts while the setting is saved: the switch waits. */
  busy: boolean
  onChange: (open: boolean) => void
}

/** The home-network switch (the `lanOpen` setting), wherever a screen offers it: Settings, and the API tab. */
export function LanSwitch({ id, label, checked, busy, onChange }: LanSwitchProps) {
  return (
    <label className="switch-row" htmlFor={id}>
      <input
        id={id}
        type="checkbox"
        role="switch"
        aria-checked={checked}
        checked={checked}
        disabled={busy}
        onChange={(event) => onChange(event.target.checked)}
        data-testid={id}
      />
      <span>{label}</span>
      {busy && <span className="muted small">Restarting the swarm…</span>}
    </label>
  )
}
