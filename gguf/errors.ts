import { NeuronError } from '../protocol'

/** A GGUF file that Neuron cannot use as it is; the message says what is wrong and what to do. */
export class GgufError extends NeuronError {
  constructor(
    code:
      | 'not_found'
      | 'not_gguf'
      | 'unsupported_version'
      | 'truncated'
      | 'corrupt'
      | 'unsupported_type'
      | 'missing_tensor'
      | 'bad_model',
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details)
    this.name = 'GgufError'
  }
}
