/**
 * The one error shape every Neuron process raises and sends: a stable `code` a program can
 * branch on, a message a person can act on, and the numbers behind it.
 */
export class NeuronError extends Error {
  readonly code: string
  readonly details: Readonly<Record<string, unknown>>

  constructor(code: string, message: string, details: Record<string, unknown> = {}) {
    super(message)
    this.name = 'NeuronError'
    this.code = code
    this.details = details
  }
}
