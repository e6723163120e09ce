import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FtpControl } from './helpers/ftp.js'
import { builtServer, freePort, projectRoot } from './helpers/server-process.js'

let cli: string
const dirs: string[] = []

beforeAll(async () => {
  cli = builtServer()
}, 120_000)
afterAll(async () => {
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true })
})

// The wiring of `wharf serve` does not depend on the database; the FTP tests beside this one run on both.
describe('wharf serve with FTP_ENABLED (sqlite)', () => {
  it('reports the FTP address and certificate at start-up, serves logins, and stops on SIGTERM', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-process-'))
    dirs.push(dataDir)
    const child = spawn(process.execPath, [cli, 'serve'], {
      env: {
        PATH: process.env['PATH'],
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        ADMIN_PASSWORD: 'admin-password-1',
        LOG_LEVEL: 'info',
        FTP_ENABLED: 'true',
        FTP_PORT: '0',
        SFTP_ENABLED: 'false',
      },
      cwd: projectRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      let out = ''
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          out += d
          if (out.includes('Wharf is listening')) resolve()
        })
        child.stderr.on('data', (d) => {
          out += d
        })
        child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
      })
      const line = out.split('\n').find((l) => l.includes('"msg":"FTP is listening"'))
      expect(line).toBeDefined()
      const report = JSON.parse(line!)
      expect(report.address).toMatch(/^127\.0\.0\.1:\d+$/)
      const cert = await fs.readFile(path.join(dataDir, 'ftp', 'tls-cert.pem'), 'utf8')
      expect(report.certificateSha256).toBe(new crypto.X509Certificate(cert).fingerprint256)

      const c = await FtpControl.connect(Number(report.address.split(':')[1]))
      await c.login('admin', 'admin-password-1')
      expect((await c.send('PWD')).code).toBe(257)
      child.kill('SIGTERM')
      expect(await c.next()).toEqual({ code: 421, text: '421 Server shutting down\r\n' })
      expect(await exited).toBe(0)
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  })
})
