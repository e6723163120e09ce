import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyPassword } from '../src/security/secrets.js'
import { dialects } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  projectRoot,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

/**
 * `wharf users …` and `wharf api-keys list|delete`, run as operators run them, on a real data
 * folder: each goes through the services, so the API's rules and Actions hold.
 */
let servers: ServerProcesses
const sites: ProcessSite[] = []

beforeAll(() => {
  servers = serverProcesses()
})

afterAll(async () => {
  for (const s of sites) await s.remove()
})

it('prints the version of package.json', async () => {
  const { version } = JSON.parse(await fs.readFile(path.join(projectRoot, 'package.json'), 'utf8'))
  const r = await servers.wharf(['--version'], { PATH: process.env['PATH'] })
  expect(r.stdout).toBe(`${version}\n`)
})

describe.each(dialects)('wharf users and api-keys (%s)', (dialect) => {
  let site: ProcessSite
  let aliceId: number
  beforeAll(async () => {
    site = await processSite(servers, dialect)
    sites.push(site)
    const made = await wharf(['users', 'create', '--username', 'alice', '--password', 'alice-password-1'])
    aliceId = JSON.parse(made.stdout).id
  }, 60_000)

  const wharf = (args: string[], extra: Record<string, string> = {}) => servers.wharf(args, site.env(extra))
  const json = async (args: string[]) => JSON.parse((await wharf(args)).stdout)
  /** A command that must fail: its exit code and what it printed on stderr. */
  const refused = async (args: string[]) => {
    try {
      await wharf(args)
    } catch (err) {
      const e = err as { code: number; stderr: string }
      return { code: e.code, stderr: e.stderr }
    }
    throw new Error(`wharf ${args.join(' ')} succeeded`)
  }
  const lastAction = async () =>
    site.db.db
      .selectFrom('actions')
      .select(['action', 'display', 'interface'])
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()

  it('lists and shows users, and says which one is missing', async () => {
    const all = await json(['users', 'list'])
    expect(all.map((u: { username: string }) => u.username)).toEqual(['admin', 'alice'])
    expect(await json(['users', 'show', '--username', 'ALICE'])).toEqual(all[1])
    expect(JSON.stringify(all)).not.toContain('password_hash')
    expect(await refused(['users', 'show', '--username', 'nobody'])).toEqual({
      code: 1,
      stderr: 'error: not-found/user-not-found: No user named nobody\n',
    })
    expect(await refused(['users', 'show'])).toEqual({
      code: 1,
      stderr: 'error: name the user with --id ID or --username NAME (one of them)\n',
    })
  })

  it('disables and enables a user with an Action each, but never the last site administrator', async () => {
    expect(await json(['users', 'disable', '--username', 'alice'])).toMatchObject({
      id: aliceId,
      disabled: true,
    })
    expect(await lastAction()).toEqual({
      action: 'user_update',
      display: 'Updated user alice (disabled)',
      interface: 'robot',
    })
    expect(await json(['users', 'enable', '--id', String(aliceId)])).toMatchObject({ disabled: false })
    expect(await refused(['users', 'disable', '--username', 'admin'])).toEqual({
      code: 1,
      stderr:
        'error: processing-failure/model-save-error: Disabled cannot be set on the last enabled site administrator: make another user a site administrator first\n',
    })
  })

  it('resets a password from WHARF_PASSWORD, or generates one and prints it once', async () => {
    const stored = async () =>
      (
        await site.db.db
          .selectFrom('users')
          .select('password_hash')
          .where('id', '=', aliceId)
          .executeTakeFirstOrThrow()
      ).password_hash
    const chosen = await wharf(['users', 'reset-password', '--username', 'alice'], {
      WHARF_PASSWORD: 'chosen-password-2',
    })
    expect(chosen.stdout).toBe(`set the password of alice (id ${aliceId}) from WHARF_PASSWORD\n`)
    expect(await verifyPassword('chosen-password-2', await stored())).toBe(true)
    expect(await lastAction()).toMatchObject({ display: 'Updated user alice (password)' })

    const generated = await wharf(['users', 'reset-password', '--id', String(aliceId)])
    const password = /to:\s+(\S+)\s+It is shown only this once\./.exec(generated.stdout)?.[1]
    expect(password).toMatch(/^[A-Za-z0-9]{24}$/)
    expect(await verifyPassword(password!, await stored())).toBe(true)
    expect(await verifyPassword('chosen-password-2', await stored())).toBe(false)
  })

  it('resets a password within the site’s password rules', async () => {
    await site.db.db
      .updateTable('sites')
      .set({
        password_min_length: 30,
        password_require_mixed: 1,
        password_require_number: 1,
        password_require_special: 1,
      })
      .execute()
    try {
      const generated = await wharf(['users', 'reset-password', '--username', 'alice'])
      const password = /to:\s+(\S+)\s+It is shown only this once\./.exec(generated.stdout)?.[1]
      expect(password).toMatch(/^[A-Za-z0-9]{48}Qz7-$/)
      const weak = await servers
        .wharf(
          ['users', 'reset-password', '--username', 'alice'],
          site.env({ WHARF_PASSWORD: 'chosen-password-3' }),
        )
        .catch((err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }))
      expect(weak).toEqual({
        code: 1,
        stderr:
          'error: processing-failure/model-save-error: Password is too short (minimum is 30 characters)\n',
      })
    } finally {
      await site.db.db
        .updateTable('sites')
        .set({
          password_min_length: 8,
          password_require_mixed: 0,
          password_require_number: 0,
          password_require_special: 0,
        })
        .execute()
    }
  })

  it('lists keys, all or one user’s, without their secrets, and deletes one', async () => {
    const made = await json(['api-keys', 'create', '--username', 'alice', '--name', 'laptop'])
    const all = await json(['api-keys', 'list'])
    // The site's own site-wide key, then alice's.
    expect(all.map((k: { name: string | null; user_id: number | null }) => [k.user_id, k.name])).toEqual([
      [null, null],
      [aliceId, 'laptop'],
    ])
    const printed = JSON.stringify(all)
    expect(printed).not.toContain(made.key)
    expect(printed).not.toContain(site.key)
    expect(await json(['api-keys', 'list', '--username', 'alice'])).toEqual([all[1]])

    const deleted = await wharf(['api-keys', 'delete', '--id', String(made.id)])
    expect(deleted.stdout).toBe(`deleted API key ${made.id} (laptop)\n`)
    expect(await lastAction()).toMatchObject({ action: 'api_key_destroy', interface: 'robot' })
    expect(await refused(['api-keys', 'delete', '--id', String(made.id)])).toEqual({
      code: 1,
      stderr: `error: not-found/api-key-not-found: API key ${made.id} not found\n`,
    })
  })

  it('deletes a user with its keys, but never the last site administrator', async () => {
    expect(await refused(['users', 'delete', '--username', 'admin'])).toEqual({
      code: 1,
      stderr:
        'error: processing-failure/model-save-error: User cannot be deleted while it is the last enabled site administrator: make another user a site administrator first\n',
    })
    const r = await wharf(['users', 'delete', '--username', 'alice'])
    expect(r.stdout).toBe(`deleted user alice (id ${aliceId})\n`)
    expect(await lastAction()).toEqual({
      action: 'user_destroy',
      display: 'Deleted user alice',
      interface: 'robot',
    })
    // Its keys went with it.
    const db = site.db.db
    expect((await db.selectFrom('users').select('username').execute()).map((u) => u.username)).toEqual([
      'admin',
    ])
    expect((await db.selectFrom('api_keys').select('user_id').execute()).map((k) => k.user_id)).toEqual([
      null,
    ])
  })
})
