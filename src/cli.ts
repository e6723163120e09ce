#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander'
import { ERRORS } from './api/error-factories.js'
import { ApiError } from './api/errors.js'
import { registerApiKeyCommands } from './cli/api-key-commands.js'
import { registerBackupCommands } from './cli/backup-commands.js'
import { BackupError } from './cli/backup-files.js'
import { registerBannedAddressCommands } from './cli/banned-address-commands.js'
import { registerBehaviorCommands } from './cli/behavior-commands.js'
import { registerBillingCommands } from './cli/billing-commands.js'
import { PortUnavailableError } from './cli/bound-ports.js'
import { registerConfigCommands } from './cli/config-commands.js'
import { settingsEnvironment } from './cli/config-file.js'
import { registerUserCommands } from './cli/user-commands.js'
import { wharfVersion } from './cli/version.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { createContainer } from './container.js'
import { isStorageFull } from './db/errors.js'
import { operatorPrincipal } from './identity/principal.js'
import { serve } from './server.js'

/**
 * The command reads its own environment, as the server does; it cannot know a running server's
 * settings, so links it prints are only right when it runs with the server's BASE_URL.
 */
const URL_NOTE = `
Links in the output (an API key's url, a download_uri) start with this command's own BASE_URL
(default http://HOST:PORT of its own environment), not with a running server's: run it with the
server's environment (BASE_URL, or HOST and PORT).`

const program = new Command()
  .name('wharf')
  .description('Wharf: self-hosted file storage and transfer with a Files.com-compatible API')
  .version(wharfVersion(), '-V, --version', "print Wharf's version")
  .showHelpAfterError()
  .addHelpText('after', URL_NOTE)

function config(): Config {
  return loadConfig(settingsEnvironment(process.env))
}

async function withContainer<T>(
  fn: (c: Awaited<ReturnType<typeof createContainer>>) => Promise<T>,
): Promise<T> {
  const c = await createContainer(config())
  try {
    return await fn(c)
  } finally {
    await c.close()
  }
}

const positiveInt = (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('must be a whole number')
  return Number(v)
}

program
  .command('serve')
  .description('run the HTTP server (the default of npm start)')
  .action(async () => {
    await serve(config())
  })

program
  .command('migrate')
  .description('apply database migrations, then exit')
  .option('--dry-run', 'list the migrations that would be applied, and apply none', false)
  .action(async (o: { dryRun: boolean }) => {
    const cfg = config()
    const { openDatabase } = await import('./db/database.js')
    const db = openDatabase({ url: cfg.databaseUrl, dataDir: cfg.dataDir })
    try {
      if (o.dryRun) {
        const pending = await db.pendingMigrations()
        console.log(pending.length ? `would apply: ${pending.join(', ')}` : 'database is up to date')
        return
      }
      const applied = await db.migrate()
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
    } finally {
      await db.close()
    }
  })

const users = program.command('users').description('manage users')
users
  .command('create')
  .description('create a user')
  .requiredOption('--username <name>', 'user name')
  .option('--password <password>', 'password (at least 8 characters); read from WHARF_PASSWORD if omitted')
  .option('--name <name>', 'full name')
  .option('--email <email>', 'e-mail address')
  .option('--site-admin', 'make the user a site administrator', false)
  .option('--bot', 'a Shared/Bot user (self_managed: false)', false)
  .action(async (o) => {
    await withContainer(async (c) => {
      const user = await c.services.users.create(operatorPrincipal(c.site.id), {
        username: o.username,
        password: o.password ?? process.env['WHARF_PASSWORD'],
        ...(o.name ? { name: o.name } : {}),
        ...(o.email ? { email: o.email } : {}),
        site_admin: o.siteAdmin,
        self_managed: !o.bot,
      })
      console.log(JSON.stringify(user, null, 2))
    })
  })

registerUserCommands(users, withContainer)

const keys = program.command('api-keys').description('manage API keys')
keys
  .command('create')
  .description('create an API key and print it (shown only once)')
  .option('--user-id <id>', 'owner user id', positiveInt)
  .option('--username <name>', 'owner user name')
  .option('--site-wide', 'a site-wide key with no user (permission set full)', false)
  .option('--name <name>', 'internal name')
  .option('--description <text>', 'description')
  .option('--permission-set <set>', 'none, full, desktop_app, sync_app, office_integration or mobile_app')
  .option('--expires-at <datetime>', 'ISO 8601 expiry')
  .option('--path <folder>', 'restrict the key to this folder')
  .addHelpText('after', URL_NOTE)
  .action(async (o) => {
    await withContainer(async (c) => {
      let userId: number | undefined = o.userId
      if (o.username) {
        const u = await c.db
          .selectFrom('users')
          .select('id')
          .where('site_id', '=', c.site.id)
          .where('username_lower', '=', String(o.username).toLowerCase())
          .executeTakeFirst()
        if (!u) throw ERRORS.userNotFound(`No user named ${o.username}`)
        userId = u.id
      }
      if (!o.siteWide && userId === undefined)
        throw new InvalidArgumentError('name --user-id or --username, or pass --site-wide')
      const key = await c.services.apiKeys.create(operatorPrincipal(c.site.id), {
        ...(userId !== undefined ? { user_id: userId } : {}),
        site_wide: o.siteWide,
        ...(o.name ? { name: o.name } : {}),
        ...(o.description ? { description: o.description } : {}),
        ...(o.permissionSet ? { permission_set: o.permissionSet } : {}),
        ...(o.expiresAt ? { expires_at: o.expiresAt } : {}),
        ...(o.path ? { path: o.path } : {}),
      })
      console.log(JSON.stringify(key, null, 2))
    })
  })

registerApiKeyCommands(keys, withContainer)
registerBillingCommands(program, withContainer)
registerBannedAddressCommands(program, withContainer)
registerBehaviorCommands(program, withContainer)
registerBackupCommands(program, config)
registerConfigCommands(program, config)
for (const c of program.commands.find((c) => c.name() === 'billing')?.commands ?? [])
  c.addHelpText('after', URL_NOTE)

/** The S3 store's start-up check failed (its module, with the AWS SDK, loads only with BLOB_STORE=s3). */
const isStoreCheck = (err: unknown): err is Error => err instanceof Error && err.name === 'S3StoreCheckError'

program.parseAsync(process.argv).catch((err: unknown) => {
  // Said in a line, like the configuration: the operator's move is to change a setting.
  if (
    err instanceof ConfigError ||
    err instanceof PortUnavailableError ||
    err instanceof BackupError ||
    (err instanceof Error && err.name === 'DatabaseNewerError') ||
    isStoreCheck(err)
  )
    console.error(err.message)
  else if (isStorageFull(err)) {
    // Said plainly, without a stack trace: the operator's move is to free space, not to debug.
    const e = err as { code?: string; message?: string }
    console.error(
      `error: Wharf cannot run because its storage is full (${e.code}: ${e.message}). Free space on the disk holding DATA_DIR${process.env['DATABASE_URL'] ? ' or the PostgreSQL server' : ''} and start it again.`,
    )
  } else if (err instanceof ApiError) console.error(`error: ${err.type}: ${err.message}`)
  else if (err instanceof InvalidArgumentError) console.error(`error: ${err.message}`)
  else console.error(err)
  process.exit(1)
})
