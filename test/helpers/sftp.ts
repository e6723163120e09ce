import { execFile } from 'node:child_process'
import pino from 'pino'
import ssh2 from 'ssh2'
import { type SftpServer, startSftp } from '../../src/sftp/sftp-server.js'
import {
  type Deferred,
  type DialectName,
  type ServerOptions,
  settle,
  startServer,
  type TestServer,
  useStarted,
} from './server.js'

/**
 * A new ed25519 key pair that reads back. ssh2 writes about one ed25519 key in 256 a byte short
 * (neither half then parses): such a pair is drawn again, as the server does for its host keys.
 */
export function sshKeyPair(): { public: string; private: string } {
  for (;;) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519')
    if (
      !(ssh2.utils.parseKey(pair.private) instanceof Error) &&
      !(ssh2.utils.parseKey(pair.public) instanceof Error)
    ) {
      return pair
    }
  }
}

export interface SftpTestServer extends TestServer {
  sftp: SftpServer
}

/** The SFTP front end of a test server's site, with the server's SFTP settings. */
export function startSftpFront(s: TestServer): Promise<SftpServer> {
  return startSftp(
    s.container,
    s.container.config.sftp,
    pino({ level: process.env['SFTP_TEST_LOG'] ?? 'silent' }, process.stderr),
  )
}

/** A test server with its SFTP front end on a free loopback port. */
export async function startSftpServer(
  dialect: DialectName,
  env: Record<string, string> = {},
  opts: Parameters<typeof startServer>[2] = {},
): Promise<SftpTestServer> {
  const s = await startServer(dialect, { SFTP_PORT: '0', SFTP_HOST: '127.0.0.1', ...env }, opts)
  const sftp = await startSftpFront(s)
  const close = s.close
  return {
    ...s,
    sftp,
    async close() {
      await sftp.close()
      await close()
    },
  }
}

/** As useServer (one server for the block, closed after it), with the SFTP front end started. */
export function useSftpServer(
  dialect: DialectName,
  env: Deferred<Record<string, string>> = {},
  opts: Deferred<ServerOptions> = {},
): SftpTestServer {
  return useStarted(`${dialect} SFTP test server`, () => startSftpServer(dialect, settle(env), settle(opts)))
}

export interface RunResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs a client program with a time limit; never throws for a non-zero exit. */
export function run(
  cmd: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
) {
  return new Promise<RunResult>((resolve) => {
    const child = execFile(
      cmd,
      args,
      {
        timeout: opts.timeoutMs ?? 30_000,
        env: { ...process.env, ...opts.env },
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 255) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
    if (opts.input !== undefined) child.stdin?.end(opts.input)
  })
}

/** Options every OpenSSH client call takes: no host-key prompts, no stored keys, no agent. */
export function sshOptions(port: number): string[] {
  return [
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=10',
    '-o',
    'IdentityAgent=none',
    '-P',
    String(port),
  ]
}

/**
 * OpenSSH's `sftp` in batch mode with a password (through sshpass): commands are read from
 * standard input; the exit status is that of the batch (a failing command stops it).
 */
export function sftpBatch(
  port: number,
  user: string,
  password: string,
  commands: string[],
  { onePrompt = false }: { onePrompt?: boolean } = {},
) {
  return run(
    'sshpass',
    [
      '-e',
      'sftp',
      ...sshOptions(port),
      // A refused password is not followed by an empty one (what a second prompt sends).
      ...(onePrompt ? ['-o', 'NumberOfPasswordPrompts=1'] : []),
      '-o',
      'PubkeyAuthentication=no',
      '-o',
      'PreferredAuthentications=password',
      // Before -b, which would otherwise turn password prompts off (the first value wins).
      '-o',
      'BatchMode=no',
      '-b',
      '-',
      `${user}@127.0.0.1`,
    ],
    { input: `${commands.join('\n')}\n`, env: { SSHPASS: password } },
  )
}

/** The same with a private key file and no password. */
export function sftpBatchWithKey(port: number, user: string, keyFile: string, commands: string[]) {
  return run(
    'sftp',
    [
      ...sshOptions(port),
      '-o',
      'PasswordAuthentication=no',
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-i',
      keyFile,
      '-b',
      '-',
      `${user}@127.0.0.1`,
    ],
    { input: `${commands.join('\n')}\n` },
  )
}
