import { type Command, InvalidArgumentError } from 'commander'
import { operatorPrincipal } from '../identity/principal.js'
import { allPages, type WithContainer } from './cli-lists.js'
import { namedUser, parseUserId } from './user-commands.js'

function parseKeyId(v: string): number {
  if (!/^\d{1,15}$/.test(v.trim()) || Number(v) < 1)
    throw new InvalidArgumentError(`"${v}" must be an API key id, e.g. 12`)
  return Number(v)
}

/**
 * `wharf api-keys list` and `delete`: keys from the shell, through the API key service as the
 * operator, so a deletion records its Action as DELETE /api_keys/{id} does. A key's secret is
 * shown only when it is created: the lists never hold it.
 */
export function registerApiKeyCommands(keys: Command, withContainer: WithContainer): void {
  keys
    .command('list')
    .description("print API keys, as GET /api_keys shows them (a JSON array, without the keys' secrets)")
    .option('--user-id <id>', "only this user's keys", parseUserId)
    .option('--username <name>', "only this user's keys")
    .action(async (o) => {
      await withContainer(async (c) => {
        const userId =
          o.userId === undefined && o.username === undefined
            ? undefined
            : await namedUser(c, { id: o.userId, username: o.username })
        const p = operatorPrincipal(c.site.id)
        const only = userId !== undefined ? { user_id: userId } : {}
        const all = await allPages((q) => c.services.apiKeys.list(p, { ...q, ...only }))
        console.log(JSON.stringify(all, null, 2))
      })
    })

  keys
    .command('delete')
    .description('delete an API key: it stops working at once')
    .requiredOption('--id <id>', 'API key id (from api-keys list)', parseKeyId)
    .action(async (o) => {
      await withContainer(async (c) => {
        const p = operatorPrincipal(c.site.id)
        const key = await c.services.apiKeys.get(p, o.id)
        await c.services.apiKeys.remove(p, o.id)
        console.log(`deleted API key ${o.id}${key.name ? ` (${key.name})` : ''}`)
      })
    })
}
