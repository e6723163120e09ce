import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { projectRoot } from './helpers/server-process.js'

/**
 * The `wharf` command as the README has operators type it: every `npx wharf …` line of the
 * README's shell examples, run as written by a shell in a checkout that has not been built yet,
 * on a real SQLite data folder. The checkout is a copy of the sources beside the project's own
 * node_modules, so its build never touches the project's dist/ (which other test files build).
 */
const run = promisify(execFile)
let checkout: string
let dataDir: string

/** Every `npx wharf` command of the README's ```sh blocks, continuation lines joined, in order. */
async function readmeCommands(): Promise<string[]> {
  const readme = await fs.readFile(path.join(projectRoot, 'README.md'), 'utf8')
  const commands: string[] = []
  for (const block of readme.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block[1]!.replace(/\\\n\s*/g, '').split('\n')
    commands.push(...lines.filter((l) => /^(\w+=\S+ )*npx wharf /.test(l)))
  }
  return commands
}

/** Runs one command line in the checkout with `sh -c`, as a user's shell would. */
async function shell(line: string, extra: Record<string, string> = {}) {
  const env: NodeJS.ProcessEnv = {
    // The Node running the tests runs the command too (CI runs the suite on two versions).
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env['PATH']}`,
    HOME: process.env['HOME'],
    DATA_DIR: dataDir,
    // npx must find the checkout's own command, never ask the registry for a package.
    npm_config_offline: 'true',
    ...extra,
  }
  // npm's own notices about the machine's npm configuration are not the command's output.
  const own = (stderr: string) => stderr.replace(/^npm warn .*\n/gm, '')
  try {
    const r = await run('sh', ['-c', line], { cwd: checkout, env, maxBuffer: 4 << 20 })
    return { code: 0, stdout: r.stdout, stderr: own(r.stderr) }
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: own(err.stderr as string) }
  }
}

beforeAll(async () => {
  checkout = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-checkout-'))
  dataDir = path.join(checkout, 'data')
  for (const entry of ['bin', 'src', 'package.json', 'tsconfig.json', 'tsconfig.build.json'])
    await fs.cp(path.join(projectRoot, entry), path.join(checkout, entry), { recursive: true })
  await fs.symlink(path.join(projectRoot, 'node_modules'), path.join(checkout, 'node_modules'), 'dir')
})

afterAll(async () => {
  if (checkout) await fs.rm(checkout, { recursive: true, force: true })
})

describe('the wharf command as the README shows it (sqlite)', () => {
  it('runs every README example in a fresh checkout, building the server only the first time', async () => {
    const commands = await readmeCommands()
    expect(commands.length).toBeGreaterThanOrEqual(6)
    const outputs: string[] = []
    for (const [i, line] of commands.entries()) {
      const r = await shell(line)
      expect({ line, code: r.code, stderr: r.stderr }).toEqual({
        line,
        code: 0,
        stderr: i === 0 ? expect.stringContaining('wharf: dist/cli.js is missing, building the server') : '',
      })
      outputs.push(r.stdout)
    }
    const json = (start: string) => JSON.parse(outputs[commands.findIndex((c) => c.startsWith(start))]!)
    expect(json('npx wharf billing invoice')).toMatchObject({ id: 1, amount: 49.95 })
    expect(json('npx wharf billing reverse-payment')).toMatchObject({ id: 2 })
    expect(json('npx wharf users create')).toMatchObject({ username: 'alice', name: 'Alice Smith' })
    // The key's url is the command's own BASE_URL, as the README and the help say.
    const key = json('BASE_URL=https://files.example.com npx wharf api-keys create')
    expect(key).toMatchObject({ name: 'scripts', url: 'https://files.example.com' })
    expect(key.key).toMatch(/^[0-9a-f]{64}$/)
  }, 240_000)

  it('rebuilds the server when src/ is newer than dist/, then runs the command', async () => {
    const past = new Date(Date.now() - 3600_000)
    await fs.utimes(path.join(checkout, 'dist', 'cli.js'), past, past)
    const r = await shell('npx wharf migrate')
    expect(r).toEqual({
      code: 0,
      stdout: 'database is up to date\n',
      stderr: expect.stringContaining('wharf: src/ changed since the last build, building the server'),
    })
  }, 240_000)

  it('builds links from its own environment, and its help says so', async () => {
    const key = await shell('npx wharf api-keys create --site-wide', { HOST: '127.0.0.1', PORT: '9999' })
    expect(key.code).toBe(0)
    expect(JSON.parse(key.stdout).url).toBe('http://127.0.0.1:9999')
    for (const command of ['api-keys create', 'billing invoice', 'billing payment']) {
      const help = await shell(`npx wharf ${command} --help`)
      expect(help.code).toBe(0)
      expect(help.stdout.replace(/\s+/g, ' ')).toContain(
        "start with this command's own BASE_URL (default http://HOST:PORT of its own environment), not with a running server's",
      )
    }
  }, 120_000)
})
