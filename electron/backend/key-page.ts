// The page a browser without the app's key sees (browser mode, ui-server.ts): what the key is for, where it is kept,
// and a form that takes the key or the whole link neuron printed, saying so when what was pasted is not the key.

/**
 * The key in what a person pasted: the key itself, the link (`http://…/?key=…`), or the whole line neuron printed
 * (`Neuron is running at http://…/?key=…`). Null when nothing was given.
 */
export function keyFromPasted(given: string | null): string | null {
  if (given === null) return null
  const text = given.trim()
  if (text === '') return null
  const inLink = /[?&]key=([\w-]+)/.exec(text)
  return inLink?.[1] ?? text
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * The page. `keyFile`: where the key is kept (the data dir's ui-key), when the server knows; `refused`: a key was
 * given and it is not this app's.
 */
export function keyPage(options: { keyFile?: string; refused: boolean }): string {
  const where =
    options.keyFile === undefined
      ? 'in the file <code>ui-key</code> in the app’s data folder'
      : `in the file <code data-testid="ui-key-file">${escapeHtml(options.keyFile)}</code>`
  const error = options.refused
    ? `<p class="error" role="alert" id="key-error" data-testid="ui-key-error">That is not this app’s key. Paste the
key kept ${where}, or the whole link Neuron printed when it started.</p>`
    : ''
  return `<!doctype html><html lang="en"><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Neuron — open with its key</title>
<style>
:root { color-scheme: light dark; --bg: #f6f7fb; --card: #fff; --text: #161a25; --muted: #646b7d; --border: #cfd4e1;
  --accent: #6d4aff; --bad: #dc2626; }
@media (prefers-color-scheme: dark) { :root { --bg: #0f1117; --card: #171a23; --text: #e8eaf0; --muted: #9299ab;
  --border: #353b4b; --accent: #8b71ff; --bad: #f87171; } }
body { font: 15px/1.55 system-ui, sans-serif; margin: 0; background: var(--bg); color: var(--text); }
main { max-width: 36rem; margin: 8vh auto; padding: 28px; background: var(--card); border: 1px solid var(--border);
  border-radius: 12px; }
h1 { font-size: 22px; margin: 0 0 12px; }
p { margin: 0 0 12px; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.92em; overflow-wrap: anywhere; }
.muted { color: var(--muted); font-size: 13px; }
form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-top: 16px; }
label { flex-basis: 100%; font-weight: 600; }
input { flex: 1 1 16rem; min-width: 0; padding: 8px 10px; border: 1px solid var(--border); border-radius: 8px;
  font: inherit; background: transparent; color: inherit; }
input[aria-invalid="true"] { border-color: var(--bad); }
button { padding: 8px 16px; border: 0; border-radius: 8px; background: var(--accent); color: #fff; font: inherit;
  font-weight: 600; cursor: pointer; }
.error { color: var(--bad); margin: 8px 0 0; }
</style>
<main>
<h1>Open Neuron with its key</h1>
<p>This Neuron app only answers a browser that holds its key, so that other programs on this computer cannot drive
your host (export its identity, change its settings). Open the link Neuron printed when it started
(<code>Neuron is running at http://127.0.0.1:…/?key=…</code>), or paste it or the key below.</p>
<p class="muted">The key is kept ${where}. Once opened, this browser remembers it.</p>
<form method="get">
<label for="key">Key or link</label>
<input id="key" name="key" data-testid="ui-key-input" autocomplete="off" spellcheck="false" autofocus
 ${options.refused ? 'aria-invalid="true" aria-describedby="key-error"' : ''}>
<button type="submit" data-testid="ui-key-submit">Open</button>
${error}
</form>
</main>`
}
