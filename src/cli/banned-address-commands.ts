import type { Command } from 'commander'
import { operatorPrincipal } from '../identity/principal.js'
import { allPages, type WithContainer } from './cli-lists.js'

/**
 * `wharf banned-addresses list` and `delete <address>`: the login defender's bans from the shell,
 * for an operator whose own address is banned from the web interface.
 */
export function registerBannedAddressCommands(program: Command, withContainer: WithContainer): void {
  const banned = program
    .command('banned-addresses')
    .description('list and lift bans of client addresses after too many failed logins')

  banned
    .command('list')
    .description('print the addresses banned now, as GET /banned_addresses shows them (a JSON array)')
    .action(async () => {
      await withContainer(async (c) => {
        const p = operatorPrincipal(c.site.id)
        const all = await allPages((q) => c.services.loginDefender.list(p, q))
        console.log(JSON.stringify(all, null, 2))
      })
    })

  banned
    .command('delete')
    .description('lift the ban of an address and forget its failed logins')
    .argument('<address>', 'the banned IPv4 or IPv6 address')
    .action(async (address: string) => {
      await withContainer(async (c) => {
        await c.services.loginDefender.lift(operatorPrincipal(c.site.id), address)
        console.log(`lifted the ban of ${address}`)
      })
    })
}
