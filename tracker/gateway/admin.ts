import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Accounts } from '../ledger/accounts'
import { requireAdmin } from './auth'
import { parse, readBody, sendJson } from './http'
import { CreateAccountRequest, GrantRequest } from './openai-schemas'

/** The operator's /admin routes: open an account, grant it credits. Each needs the admin token. */
export class AdminEndpoints {
  constructor(
    private readonly accounts: Accounts,
    private readonly adminToken: string | undefined,
  ) {}

  async createAccount(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requireAdmin(req, this.adminToken)
    const body = parse(CreateAccountRequest, await readBody(req))
    const created = await this.accounts.create({
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.grant_micro === undefined ? {} : { grantMicro: body.grant_micro }),
      ...(body.public_key === undefined ? {} : { publicKey: body.public_key }),
    })
    sendJson(res, 201, {
      account_id: created.account.accountId,
      name: created.account.name,
      api_key: created.apiKey,
      grant_micro: created.grantMicro,
      balance_micro: await this.accounts.balance(created.account.accountId),
    })
  }

  async grant(req: IncomingMessage, res: ServerResponse, accountId: string): Promise<void> {
    requireAdmin(req, this.adminToken)
    const body = parse(GrantRequest, await readBody(req))
    await this.accounts.grant(accountId, body.micro)
    sendJson(res, 200, { account_id: accountId, balance_micro: await this.accounts.balance(accountId) })
  }
}
