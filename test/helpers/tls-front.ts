import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import https from 'node:https'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { forward, listenLoopback } from './forward.js'

/**
 * An HTTPS front for a test server, as a TLS-terminating proxy gives Wharf in production. The
 * files.com SDK downloads with `https.get`, so its download helpers only work over HTTPS. The
 * certificate is self-signed for 127.0.0.1 and made fresh for each run (nothing secret is kept).
 */
export interface TlsFront {
  url: string
  /** PEM of the certificate, for a client that must trust it. */
  cert: string
  close(): Promise<void>
}

export async function startTlsFront(target: string): Promise<TlsFront> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-tls-'))
  const keyFile = path.join(dir, 'key.pem')
  const certFile = path.join(dir, 'cert.pem')
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '2',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ])
  const key = await fs.readFile(keyFile, 'utf8')
  const cert = await fs.readFile(certFile, 'utf8')
  await fs.rm(dir, { recursive: true, force: true })

  const upstream = new URL(target)
  const server = https.createServer({ key, cert }, (req, res) => forward(upstream, req, res))
  const { port, close } = await listenLoopback(server)
  return { url: `https://127.0.0.1:${port}`, cert, close }
}
