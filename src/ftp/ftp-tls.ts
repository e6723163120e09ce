import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import tls from 'node:tls'
import type { ServerKeys } from '../modules/server-keys/server-keys.js'
import type { FtpConfig } from './ftp-config.js'

export interface FtpTls {
  context: tls.SecureContext
  /** SHA-256 fingerprint of the certificate, as clients show it (AB:CD:…). */
  fingerprint: string
  /** The certificate came from FTP_TLS_CERT, or was generated. */
  source: 'settings' | 'generated'
}

const CERT_FILE = 'tls-cert.pem'
const KEY_FILE = 'tls-key.pem'

/** The name of the generated certificate's set in the database's server keys. */
const SHARED_NAME = 'ftp-tls'

/**
 * The certificate of explicit TLS: the files the settings name, or else a self-signed one made
 * on the first start and kept under DATA_DIR/ftp, so that clients which remember a certificate
 * they accepted once are not asked again after a restart. With the database's server keys
 * (`shared`), the generated pair lives there, so that every node presents the same certificate:
 * the first node proposes the pair it has under DATA_DIR/ftp, if any, and each node keeps a copy
 * there.
 */
export async function loadFtpTls(config: FtpConfig, shared?: ServerKeys): Promise<FtpTls> {
  let cert: string
  let key: string
  let source: FtpTls['source']
  if (config.tls) {
    ;[cert, key] = await Promise.all([
      readOrExplain(config.tls.certFile, 'FTP_TLS_CERT'),
      readOrExplain(config.tls.keyFile, 'FTP_TLS_KEY'),
    ])
    source = 'settings'
  } else {
    ;({ cert, key } = shared ? await sharedPair(config.tlsDir, shared) : await generatedPair(config.tlsDir))
    source = 'generated'
  }
  const files = source === 'settings' ? 'FTP_TLS_CERT and FTP_TLS_KEY' : `the files in ${config.tlsDir}`
  return { ...usable({ cert, key }, files), source }
}

/** The pair's TLS context and fingerprint; `files` names them in the error when they do not load. */
function usable(pair: { cert: string; key: string }, files: string): Omit<FtpTls, 'source'> {
  try {
    const context = tls.createSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' })
    const fingerprint = new crypto.X509Certificate(pair.cert).fingerprint256
    return { context, fingerprint }
  } catch (err) {
    throw new Error(`${files} are not a PEM certificate and its private key (${(err as Error).message})`)
  }
}

async function readOrExplain(file: string, setting: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8')
  } catch (err) {
    throw new Error(`${setting}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? err})`)
  }
}

async function generatedPair(dir: string): Promise<{ cert: string; key: string }> {
  const kept = await keptPair(dir)
  if (kept) return kept
  const pair = await newPair()
  await keepPair(dir, pair)
  return pair
}

/** The database's pair, proposing this node's own (or a new one) when there is none yet. */
async function sharedPair(dir: string, shared: ServerKeys): Promise<{ cert: string; key: string }> {
  const set = await shared.agree(SHARED_NAME, async () => {
    const kept = await keptPair(dir)
    // A pair that does not load stops this node here, before every node would read it from the database.
    if (kept) usable(kept, `the files in ${dir}`)
    const pair = kept ?? (await newPair())
    return { [CERT_FILE]: pair.cert, [KEY_FILE]: pair.key }
  })
  const cert = set[CERT_FILE]
  const key = set[KEY_FILE]
  if (cert === undefined || key === undefined) throw new Error("The database's FTP certificate lacks a file")
  const kept = await keptPair(dir)
  if (kept?.cert !== cert || kept.key !== key) await keepPair(dir, { cert, key })
  return { cert, key }
}

async function keptPair(dir: string): Promise<{ cert: string; key: string } | null> {
  try {
    return {
      cert: await fs.readFile(path.join(dir, CERT_FILE), 'utf8'),
      key: await fs.readFile(path.join(dir, KEY_FILE), 'utf8'),
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    return null
  }
}

async function newPair(): Promise<{ cert: string; key: string }> {
  // Needed once per site (the pair is then shared through the database): not loaded otherwise.
  const { default: selfsigned } = await import('selfsigned')
  const pair = await selfsigned.generate([{ name: 'commonName', value: 'Wharf FTP' }], {
    keyType: 'rsa',
    keySize: 2048,
    notBeforeDate: new Date(Date.now() - 86400_000),
    notAfterDate: new Date(Date.now() + 10 * 365 * 86400_000),
    algorithm: 'sha256',
  })
  return { cert: pair.cert, key: pair.private }
}

async function keepPair(dir: string, pair: { cert: string; key: string }): Promise<void> {
  await fs.mkdir(dir, { recursive: true })
  // The key first and private; the certificate last, so a crash between them regenerates both.
  await writeAtomically(path.join(dir, KEY_FILE), pair.key, 0o600)
  await writeAtomically(path.join(dir, CERT_FILE), pair.cert, 0o644)
}

async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`
  await fs.writeFile(tmp, text, { mode })
  await fs.rename(tmp, file)
}
