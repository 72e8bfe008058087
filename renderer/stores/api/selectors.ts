import type { ApiAccessView } from '../../../protocol/app'

/** What the examples put where the key goes when it is not on screen: an environment variable the user sets. */
export const KEY_PLACEHOLDER = '$NEURON_KEY'

export interface ApiExample {
  id: 'curl' | 'python' | 'javascript'
  label: string
  code: string
}

/** The model the examples ask for: the first the swarm lists, or a placeholder while it lists none. */
export function exampleModel(view: ApiAccessView): string {
  return view.modelIds[0] ?? 'MODEL_ID'
}

/**
 * A chat completion with curl, Python's and JavaScript's openai clients,
 * filled with the endpoint, model and key (or its placeholder).
 */
export function apiExamples(view: ApiAccessView, model: string, key: string | null): ApiExample[] {
  const { endpoint } = view
  const shellKey = key ?? KEY_PLACEHOLDER
  const codeKey = key === null ? null : JSON.stringify(key)
  const prompt = 'Once upon a time'
  return [
    {
      id: 'curl',
      label: 'curl',
      code: [
        `curl ${endpoint}/chat/completions \\`,
        `  -H "Authorization: Bearer ${shellKey}" \\`,
        `  -H "Content-Type: application/json" \\`,
        `  -d '${JSON.stringify({ model, messages: [{ role: 'user', content: prompt }], max_tokens: 64 })}'`,
      ].join('\n'),
    },
    {
      id: 'python',
      label: 'Python (openai)',
      code: [
        ...(key === null ? ['import os'] : []),
        'from openai import OpenAI',
        '',
        `client = OpenAI(base_url=${JSON.stringify(endpoint)}, api_key=${codeKey ?? 'os.environ["NEURON_KEY"]'})`,
        `reply = client.chat.completions.create(model=${JSON.stringify(model)}, messages=[{"role": "user", ` +
          `"content": ${JSON.stringify(prompt)}}], max_tokens=64)`,
        'print(reply.choices[0].message.content)',
      ].join('\n'),
    },
    {
      id: 'javascript',
      label: 'JavaScript (openai)',
      code: [
        "import OpenAI from 'openai'",
        '',
        `const client = new OpenAI({ baseURL: ${JSON.stringify(endpoint)}, apiKey: ` +
          `${codeKey ?? 'process.env.NEURON_KEY'} })`,
        `const reply = await client.chat.completions.create({ model: ${JSON.stringify(model)}, messages: [{ role: ` +
          `'user', content: ${JSON.stringify(prompt)} }], max_tokens: 64 })`,
        'console.log(reply.choices[0].message.content)',
      ].join('\n'),
    },
  ]
}
