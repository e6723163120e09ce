import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import tls from 'node:tls'
import selfsigned from 'selfsigned'
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

/**
 * The certificate of explicit TLS: the files the settings name, or else a self-signed one made
 * on the first start and kept under DATA_DIR/ftp, so that clients which remember a certificate
 * they accepted once are not asked again after a restart.
 */
export async function loadFtpTls(config: FtpConfig): Promise<FtpTls> {
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
    ;({ cert, key } = await generatedPair(config.tlsDir))
    source = 'generated'
  }
  try {
    const context = tls.createSecureContext({ cert, key, minVersion: 'TLSv1.2' })
    const fingerprint = new crypto.X509Certificate(cert).fingerprint256
    return { context, fingerprint, source }
  } catch (err) {
    const files = source === 'settings' ? 'FTP_TLS_CERT and FTP_TLS_KEY' : `the files in ${config.tlsDir}`
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
  const certPath = path.join(dir, CERT_FILE)
  const keyPath = path.join(dir, KEY_FILE)
  try {
    return { cert: await fs.readFile(certPath, 'utf8'), key: await fs.readFile(keyPath, 'utf8') }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const pair = await selfsigned.generate([{ name: 'commonName', value: 'Wharf FTP' }], {
    keyType: 'rsa',
    keySize: 2048,
    notBeforeDate: new Date(Date.now() - 86400_000),
    notAfterDate: new Date(Date.now() + 10 * 365 * 86400_000),
    algorithm: 'sha256',
  })
  await fs.mkdir(dir, { recursive: true })
  // The key first and private; the certificate last, so a crash between them regenerates both.
  await writeAtomically(keyPath, pair.private, 0o600)
  await writeAtomically(certPath, pair.cert, 0o644)
  return { cert: pair.cert, key: pair.private }
}

async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`
  await fs.writeFile(tmp, text, { mode })
  await fs.rename(tmp, file)
}
