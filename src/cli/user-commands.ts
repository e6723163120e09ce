import { type Command, InvalidArgumentError } from 'commander'
import { ERRORS } from '../api/error-factories.js'
import type { Container } from '../container.js'
import { operatorPrincipal } from '../identity/principal.js'
import { completeForRules } from '../modules/passwords/password-rules.js'
import { generatePassword } from '../security/secrets.js'
import { allPages, type WithContainer } from './cli-lists.js'

/** `--id 12`: a user id. */
export function parseUserId(v: string): number {
  if (!/^\d{1,15}$/.test(v.trim()) || Number(v) < 1)
    throw new InvalidArgumentError(`"${v}" must be a user id, e.g. 12`)
  return Number(v)
}

/** The user an account command names: `--id` or `--username`, exactly one. */
export async function namedUser(c: Container, o: { id?: number; username?: string }): Promise<number> {
  if ((o.id === undefined) === (o.username === undefined))
    throw new InvalidArgumentError('name the user with --id ID or --username NAME (one of them)')
  if (o.id !== undefined) return o.id
  const u = await c.db
    .selectFrom('users')
    .select('id')
    .where('site_id', '=', c.site.id)
    .where('username_lower', '=', String(o.username).toLowerCase())
    .executeTakeFirst()
  if (!u) throw ERRORS.userNotFound(`No user named ${o.username}`)
  return u.id
}

/** A command that acts on one user, named by `--id` or `--username`. */
function onOneUser(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option('--id <id>', 'user id', parseUserId)
    .option('--username <name>', 'user name')
}

/**
 * `wharf users list|show|disable|enable|delete|reset-password`: accounts from the shell, for when
 * the web interface is out of reach. Each goes through the user service as the operator (a
 * site-wide principal, interface robot), so the API's rules hold (the last enabled site
 * administrator is never disabled or deleted) and each change records its Action.
 */
export function registerUserCommands(users: Command, withContainer: WithContainer): void {
  users
    .command('list')
    .description('print every user of the site, as GET /users shows them (a JSON array)')
    .action(async () => {
      await withContainer(async (c) => {
        const p = operatorPrincipal(c.site.id)
        const all = await allPages((q) => c.services.users.list(p, q))
        console.log(JSON.stringify(all, null, 2))
      })
    })

  onOneUser(users, 'show', 'print one user, as GET /users/{id} shows it').action(async (o) => {
    await withContainer(async (c) => {
      const user = await c.services.users.get(operatorPrincipal(c.site.id), await namedUser(c, o))
      console.log(JSON.stringify(user, null, 2))
    })
  })

  for (const [name, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    onOneUser(
      users,
      name,
      disabled
        ? 'disable a user: no login on any interface until enabled (never the last enabled site administrator)'
        : 'enable a disabled user',
    ).action(async (o) => {
      await withContainer(async (c) => {
        const user = await c.services.users.update(operatorPrincipal(c.site.id), await namedUser(c, o), {
          disabled,
        })
        console.log(JSON.stringify(user, null, 2))
      })
    })
  }

  onOneUser(
    users,
    'delete',
    'delete a user with its API keys, sessions and folder permissions (never the last enabled site administrator)',
  ).action(async (o) => {
    await withContainer(async (c) => {
      const p = operatorPrincipal(c.site.id)
      const id = await namedUser(c, o)
      const { username } = await c.services.users.get(p, id)
      await c.services.users.remove(p, id)
      console.log(`deleted user ${username} (id ${id})`)
    })
  })

  onOneUser(
    users,
    'reset-password',
    'set a new password (read from WHARF_PASSWORD, else generated and printed once) and end the user’s sessions',
  ).action(async (o) => {
    await withContainer(async (c) => {
      const chosen = process.env['WHARF_PASSWORD'] || undefined
      // A made-up password takes whatever the site's rules ask for.
      const password =
        chosen ?? completeForRules(generatePassword, await c.services.passwords.rules(c.site.id))
      const user = await c.services.users.update(operatorPrincipal(c.site.id), await namedUser(c, o), {
        password,
      })
      if (chosen) console.log(`set the password of ${user.username} (id ${user.id}) from WHARF_PASSWORD`)
      else
        console.log(
          `set the password of ${user.username} (id ${user.id}) to:\n\n    ${password}\n\nIt is shown only this once.`,
        )
    })
  })
}
