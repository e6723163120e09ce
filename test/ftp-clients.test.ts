import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { historyInterfaces, md5, run, uploadHook, useFtpWorld } from './helpers/ftp.js'
import { dialects } from './helpers/server.js'

const FTPLIB_CLIENT = fileURLToPath(new URL('./fixtures/ftp/ftplib-client.py', import.meta.url))

/** Python's ftplib and curl, in clear and with explicit TLS, against a real Wharf. */
describe.each(dialects)('FTP with ftplib and curl (%s)', (dialect) => {
  const w = useFtpWorld(dialect)
  let dir: string
  let local: string
  const data = crypto.randomBytes(300_001)

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-clients-'))
    local = path.join(dir, 'upload.bin')
    await fs.writeFile(local, data)
  })
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  describe.each(['plain', 'tls'])('ftplib (%s)', (mode) => {
    it('uploads, lists, downloads from an offset, renames and deletes; refused outside its folder', async () => {
      const name = `py-${mode}.bin`
      const r = await run('python3', [
        FTPLIB_CLIENT,
        '127.0.0.1',
        String(w.s.ftpPort),
        w.user.username,
        w.user.password,
        mode,
        local,
        name,
      ])
      expect(r.stderr).toBe('')
      const out = JSON.parse(r.stdout)
      expect(out.login).toMatch(/^230/)
      if (mode === 'tls') expect(out.prot).toMatch(/^200/)
      expect(out.stor).toMatch(/^226/)
      expect(out.nlst).toContain(name)
      expect(out.mlsd[name]).toBe(String(data.length))
      expect(out.size).toBe(data.length)
      expect(out.md5).toBe(md5(data))
      expect(out.tail_md5).toBe(md5(data.subarray(10)))
      expect(out.after_rename).toContain(`renamed-${name}`)
      expect(out.after_rename).not.toContain(name)
      expect(out.outside).toMatch(/^550 /)
      expect(out.dele).toMatch(/^250/)
      expect(out.after_delete).not.toContain(`renamed-${name}`)

      const hook = await uploadHook(w, `partner/${name}`)
      expect(hook).toMatchObject({ operation: 'Upload', protocol: 'ftp', username: w.user.username })
      expect(await historyInterfaces(w.s, `partner/${name}`)).toContain('ftp')
    })
  })

  describe.each(['plain', 'tls'])('curl (%s)', (mode) => {
    const tls = mode === 'tls' ? ['--ssl-reqd', '-k'] : []
    const curl = (...args: string[]) =>
      run('curl', ['-sS', '--max-time', '30', ...tls, '-u', `${w.user.username}:${w.user.password}`, ...args])
    const url = (p: string) => `ftp://127.0.0.1:${w.s.ftpPort}/${p}`

    it('uploads, lists, downloads, renames and deletes; refused outside its folder', async () => {
      const name = `curl-${mode}.bin`
      expect(await curl('-T', local, url(`partner/${name}`))).toMatchObject({ code: 0, stderr: '' })

      const listed = await curl(url('partner/'))
      expect(listed.code).toBe(0)
      expect(listed.stdout).toMatch(new RegExp(`^-rw-r--r-- .* ${data.length} .* ${name}\\r?$`, 'm'))

      const out = path.join(dir, `${name}.down`)
      expect(await curl('-o', out, url(`partner/${name}`))).toMatchObject({ code: 0 })
      expect(md5(await fs.readFile(out))).toBe(md5(data))

      const ranged = await curl('-r', '100-', url(`partner/${name}`), '-o', `${out}.tail`)
      expect(ranged.code).toBe(0)
      expect(md5(await fs.readFile(`${out}.tail`))).toBe(md5(data.subarray(100)))

      const renamed = await curl(
        '-Q',
        `RNFR /partner/${name}`,
        '-Q',
        `RNTO /partner/moved-${name}`,
        '--list-only',
        url('partner/'),
      )
      expect(renamed.code).toBe(0)
      expect(renamed.stdout.split(/\r?\n/)).toContain(`moved-${name}`)
      expect(renamed.stdout.split(/\r?\n/)).not.toContain(name)

      const deleted = await curl('-Q', `DELE /partner/moved-${name}`, '--list-only', url('partner/'))
      expect(deleted.code).toBe(0)
      expect(deleted.stdout.split(/\r?\n/)).not.toContain(`moved-${name}`)

      // Upload refused by the folder permissions: curl's "upload failed" after the server's 550.
      const refused = await curl('--ftp-method', 'nocwd', '-T', local, url(`private/${name}`))
      expect(refused.code).toBe(25)
      expect(refused.stderr).toContain('550')

      const hook = await uploadHook(w, `partner/${name}`)
      expect(hook).toMatchObject({ operation: 'Upload', protocol: 'ftp', username: w.user.username })
      expect(await historyInterfaces(w.s, `partner/${name}`)).toContain('ftp')
    })
  })
})
