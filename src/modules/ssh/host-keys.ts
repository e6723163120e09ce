import fs from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Logger } from 'pino'
import type { ServerKeys } from '../server-keys/server-keys.js'
import { describeBlob, type SshPublicKey, ssh2 } from './ssh-keys.js'

/** One of the server's host keys: its private key for the SSH server, its fingerprints for people. */
export interface HostKey extends SshPublicKey {
  /** 1 ed25519, 2 RSA; further keys given by setting follow. */
  id: number
  /** Where it was read from: its file, or its name in the database's set (`sftp-host-keys/<file>`). */
  file: string
  privateKey: string
}

const generate = (type: 'ed25519' | 'rsa', opts: { bits?: number; comment?: string }) =>
  (
    promisify(ssh2().utils.generateKeyPair) as (
      type: 'ed25519' | 'rsa',
      opts: { bits?: number; comment?: string },
    ) => Promise<{ private: string; public: string }>
  )(type, opts)

const GENERATED = [
  { file: 'ssh_host_ed25519_key', type: 'ed25519' as const, opts: {} },
  { file: 'ssh_host_rsa_key', type: 'rsa' as const, opts: { bits: 3072 } },
]

/** The name of the host key set in the database's server keys. */
const SHARED_NAME = 'sftp-host-keys'

/**
 * The SFTP server's host keys. Without SFTP_HOST_KEY_FILES, an ed25519 and an RSA key are
 * generated once and kept ever after: a client that has trusted the server keeps trusting it.
 * With the database's server keys (`shared`), the set lives there, so that every node serving the
 * site presents the same keys; the first node to need them proposes the keys it already has under
 * DATA_DIR/sftp (a server that ran alone keeps its fingerprints), else new ones. Each node also
 * keeps the set under DATA_DIR/sftp (OpenSSH format, mode 0600), where ssh-keygen can read it.
 * Loaded on first use, so a server that never speaks SFTP never generates them.
 */
export class HostKeys {
  private loading: Promise<HostKey[]> | null = null

  constructor(
    private readonly dir: string,
    /** Private key files given by setting (used as they are, never generated). */
    private readonly files: string[] = [],
    private readonly shared?: ServerKeys,
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {}

  all(): Promise<HostKey[]> {
    this.loading ??= this.load().catch((err: unknown) => {
      this.loading = null
      throw err
    })
    return this.loading
  }

  private async load(): Promise<HostKey[]> {
    if (this.files.length > 0) {
      return Promise.all(
        this.files.map(async (file, i) => keyFrom(i + 1, file, await fs.readFile(file, 'utf8'))),
      )
    }
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 })
    const keys: HostKey[] = []
    if (!this.shared) {
      for (const [i, g] of GENERATED.entries()) {
        const file = path.join(this.dir, g.file)
        keys.push(keyFrom(i + 1, file, await readOrCreate(file, () => generateValid(g.type, g.opts))))
      }
      return keys
    }
    const set = await this.shared.agree(SHARED_NAME, () => this.proposal())
    for (const [i, g] of GENERATED.entries()) {
      const text = set[g.file]
      if (text === undefined) throw new Error(`The database's SFTP host keys lack ${g.file}`)
      const file = path.join(this.dir, g.file)
      await this.keepCopy(file, text)
      keys.push(keyFrom(i + 1, `${SHARED_NAME}/${g.file}`, text))
    }
    return keys
  }

  /** The keys this node would offer: those it has under DATA_DIR/sftp, new ones for the others. */
  private async proposal(): Promise<Record<string, string>> {
    const set: Record<string, string> = {}
    for (const g of GENERATED) {
      const file = path.join(this.dir, g.file)
      const kept = await readIfThere(file)
      // A file that is no key stops this node here, before every node would read it from the database.
      if (kept !== null) keyFrom(0, file, kept)
      set[g.file] = kept ?? (await generateValid(g.type, g.opts))
    }
    return set
  }

  /**
   * The local copy of a shared key. One that differs (this node had keys of its own before it
   * joined a site whose keys were already stored) is kept beside it as `.replaced`.
   */
  private async keepCopy(file: string, text: string): Promise<void> {
    const local = await readIfThere(file)
    if (local === text) return
    if (local !== null) {
      await fs.rename(file, `${file}.replaced`)
      this.logger?.warn(
        { file },
        "the site's SFTP host keys in the database differ from this node's: the database's are used, the old file is kept as .replaced",
      )
    }
    await readOrCreate(file, () => Promise.resolve(text))
  }
}

async function readIfThere(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * A new private key that reads back. ssh2 1.17 writes about one ed25519 key in 256 wrongly (a
 * public key whose first byte is zero comes out a byte short, and neither half then parses):
 * such a key is thrown away and another made.
 */
async function generateValid(type: 'ed25519' | 'rsa', opts: { bits?: number }): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pair = await generate(type, opts)
    const priv = ssh2().utils.parseKey(pair.private)
    const pub = ssh2().utils.parseKey(pair.public)
    if (!(priv instanceof Error) && !(pub instanceof Error)) return pair.private
  }
  throw new Error(`Could not generate a valid ${type} host key`)
}

/** The file's key; if there is none, a new one written so that a concurrent writer's wins. */
async function readOrCreate(file: string, make: () => Promise<string>): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const text = await make()
  const tmp = `${file}.${process.pid}.tmp`
  await fs.writeFile(tmp, text, { mode: 0o600 })
  try {
    // link, not rename: it fails if another process got there first, and theirs is kept.
    await fs.link(tmp, file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    await fs.rm(tmp, { force: true })
  }
  return fs.readFile(file, 'utf8')
}

function keyFrom(id: number, file: string, privateKey: string): HostKey {
  const parsed = ssh2().utils.parseKey(privateKey)
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (!key || key instanceof Error || !key.isPrivateKey()) {
    throw new Error(`${file} does not hold an unencrypted SSH private key`)
  }
  return { id, file, privateKey, ...describeBlob(key.getPublicSSH()) }
}
