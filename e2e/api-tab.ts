// The API tab as a developer uses it: copy the endpoint and a fresh key from the page, call the swarm
// with curl, then revoke the key and see it refused.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { promisify } from 'node:util'
import type { Page } from 'playwright-core'
import { expect } from 'vitest'
import { openScreen, screenshot } from './browser'

export const CURL = '/usr/bin/curl'
export const NEEDS_CURL = existsSync(CURL) ? '' : ` (skipped: ${CURL} is absent; apt-get install -y curl)`
const execFileAsync = promisify(execFile)

/** POSTs a short chat completion with curl; the HTTP status and the parsed body. */
async function curlCompletion(
  endpoint: string,
  key: string,
  model: string,
): Promise<{ status: number; body: unknown }> {
  const request = JSON.stringify({ model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 })
  const args = [
    '-sS',
    '-w',
    '\n%{http_code}',
    '-H',
    `Authorization: Bearer ${key}`,
    '-H',
    'Content-Type: application/json',
    '-d',
    request,
  ]
  const { stdout } = await execFileAsync(CURL, [...args, `${endpoint}/chat/completions`], { timeout: 90_000 })
  const cut = stdout.lastIndexOf('\n')
  return { status: Number(stdout.slice(cut + 1)), body: JSON.parse(stdout.slice(0, cut)) }
}

async function copied(page: Page, testId: string): Promise<string> {
  await page.getByTestId(testId).click()
  await expect.poll(() => page.getByTestId(testId).getAttribute('data-copied')).toBe('true')
  return page.evaluate(() => navigator.clipboard.readText())
}

/**
 * On the API screen of the embedded swarm: a new key works with curl, its request shows in the log, the key shows
 * masked once the screen is left, survives a cancelled revoke, and is refused once revoked.
 */
export async function apiKeyWorksWithCurl(page: Page, trackerUrl: string, model: string): Promise<void> {
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
  await openScreen(page, 'api')
  const endpoint = await copied(page, 'api-endpoint-copy')
  expect(endpoint).toBe(`${trackerUrl}/v1`)
  await page.getByTestId('api-key-create').click()
  await page.getByTestId('api-key-full').waitFor()
  const key = await copied(page, 'api-key-copy')
  expect(key).toMatch(/^nk-/)
  expect(await page.getByTestId('api-example-curl').textContent()).toContain(`curl ${endpoint}/chat/completions`)
  expect(await page.getByTestId('api-example-curl').textContent()).toContain(`Bearer ${key}`)
  await screenshot(page, 'api-key')

  const answered = await curlCompletion(endpoint, key, model)
  expect(answered.status).toBe(200)
  expect(answered.body).toMatchObject({
    model,
    choices: [{ message: { role: 'assistant', content: expect.any(String) } }],
  })

  // Shown once: back on the screen, only its masked form.
  await openScreen(page, 'computer')
  await openScreen(page, 'api')
  await expect
    .poll(() => page.getByTestId('api-key-masked').textContent())
    .toContain(`${key.slice(0, 5)}…${key.slice(-4)}`)
  expect(await page.getByTestId('api-key-full').count()).toBe(0)
  expect(await page.getByTestId('api-example-curl').textContent()).not.toContain(key)

  // The request log shows the curl call, with the tokens its answer's usage gave.
  const usage = (answered.body as { usage: { prompt_tokens: number; completion_tokens: number } }).usage
  await page.getByTestId('api-requests-refresh').click()
  await expect
    .poll(() => page.getByTestId('api-request-completion').first().textContent())
    .toBe(String(usage.completion_tokens))
  expect(await page.getByTestId('api-request-prompt').first().textContent()).toBe(String(usage.prompt_tokens))

  // Revoking asks first: Cancel keeps the key working.
  await page.getByTestId('api-key-revoke').click()
  await page.getByTestId('api-key-dialog').waitFor()
  await page.getByTestId('dialog-cancel').click()
  expect(await page.getByTestId('api-key-dialog').count()).toBe(0)
  expect((await curlCompletion(endpoint, key, model)).status).toBe(200)
  await page.getByTestId('api-key-revoke').click()
  await page.getByTestId('dialog-confirm').click()
  await page.getByTestId('api-key-none').waitFor()
  const refused = await curlCompletion(endpoint, key, model)
  expect(refused).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } })
  await screenshot(page, 'api-key-revoked')
}
