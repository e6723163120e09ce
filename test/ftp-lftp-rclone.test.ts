import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FtpWorld, ftpWorld, historyInterfaces, md5, run, uploadHook } from './helpers/ftp.js'
import { dialects } from './helpers/server.js'

/** lftp and rclone's ftp backend, in clear and with explicit TLS, against a real Wharf. */
describe.each(dialects)('FTP with lftp and rclone (%s)', (dialect) => {
  let w: FtpWorld
  let dir: string
  const data = crypto.randomBytes(250_003)

  beforeAll(async () => {
    w = await ftpWorld(dialect)
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-tools-'))
    await fs.mkdir(path.join(dir, 'src'))
    await fs.writeFile(path.join(dir, 'src', 'a.bin'), data)
    await fs.writeFile(path.join(dir, 'src', 'b.txt'), 'hello from rclone\n')
    await fs.writeFile(path.join(dir, 'rclone.conf'), '')
  })
  afterAll(async () => {
    await w?.listener.close()
    await w?.s.close()
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  describe.each(['plain', 'tls'])('lftp (%s)', (mode) => {
    const settings =
      mode === 'tls'
        ? 'set ftp:ssl-force true; set ftp:ssl-protect-data true; set ssl:verify-certificate no;'
        : 'set ftp:ssl-allow false;'
    const lftp = (commands: string) =>
      run(
        'lftp',
        [
          '-c',
          `${settings} set net:max-retries 1; set net:timeout 15; set cmd:fail-exit true; ` +
            `open -u ${w.user.username},${w.user.password} -p ${w.s.ftpPort} 127.0.0.1; ${commands}`,
        ],
        { cwd: dir },
      )

    it('puts, lists, gets, moves, removes and makes folders; refused outside its folder', async () => {
      const name = `lftp-${mode}.bin`
      const r = await lftp(
        `cd partner; put src/a.bin -o ${name}; ls; echo ==; get ${name} -o ${name}.down; ` +
          `mv ${name} moved-${name}; cls -1; echo ==; rm moved-${name}; mkdir sub-${mode}; cls -1`,
      )
      expect(r).toMatchObject({ code: 0, stderr: '' })
      const [listing, afterMove, afterRm] = r.stdout.split('==\n')
      expect(listing).toMatch(new RegExp(`^-rw-r--r-- .* ${data.length} .* ${name}$`, 'm'))
      expect(afterMove).toContain(`moved-${name}`)
      expect(afterRm).toContain(`sub-${mode}/`)
      expect(afterRm).not.toContain(`moved-${name}`)
      expect(md5(await fs.readFile(path.join(dir, `${name}.down`)))).toBe(md5(data))

      const refused = await lftp(`put src/a.bin -o /private/${name}`)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain('550 You do not have permission to write')

      const hook = await uploadHook(w, `partner/${name}`)
      expect(hook).toMatchObject({ operation: 'Upload', protocol: 'ftp', username: w.user.username })
      expect(await historyInterfaces(w.s, `partner/${name}`)).toContain('ftp')
    })
  })

  describe.each(['plain', 'tls'])('rclone (%s)', (mode) => {
    let remote: string
    const rclone = (...args: string[]) =>
      run('rclone', [
        '--config',
        path.join(dir, 'rclone.conf'),
        '--retries',
        '1',
        '--low-level-retries',
        '1',
        ...args,
      ])

    beforeAll(async () => {
      const obscured = (await run('rclone', ['obscure', w.user.password])).stdout.trim()
      const tls = mode === 'tls' ? ',explicit_tls=true,no_check_certificate=true' : ''
      remote = `:ftp,host=127.0.0.1,port=${w.s.ftpPort},user=${w.user.username},pass=${obscured}${tls}:`
    })

    it('copies, checks, downloads, moves and deletes; refused outside its folder', async () => {
      const folder = `partner/rclone-${mode}`
      expect((await rclone('copy', path.join(dir, 'src'), `${remote}${folder}`)).code).toBe(0)
      const check = await rclone('check', path.join(dir, 'src'), `${remote}${folder}`)
      expect(check.code).toBe(0)
      expect(check.stderr).toContain('2 matching files')
      expect((await rclone('lsf', `${remote}${folder}`)).stdout.split('\n').sort()).toEqual([
        '',
        'a.bin',
        'b.txt',
      ])

      const back = path.join(dir, `back-${mode}`)
      expect((await rclone('copy', `${remote}${folder}`, back)).code).toBe(0)
      expect(md5(await fs.readFile(path.join(back, 'a.bin')))).toBe(md5(data))

      expect((await rclone('moveto', `${remote}${folder}/b.txt`, `${remote}${folder}/c.txt`)).code).toBe(0)
      expect((await rclone('deletefile', `${remote}${folder}/a.bin`)).code).toBe(0)
      expect((await rclone('lsf', `${remote}${folder}`)).stdout).toBe('c.txt\n')

      const refused = await rclone('copyto', path.join(dir, 'src', 'b.txt'), `${remote}private/b.txt`)
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain('550 You do not have permission to write')

      const hook = await uploadHook(w, `${folder}/a.bin`)
      expect(hook).toMatchObject({ operation: 'Upload', protocol: 'ftp', username: w.user.username })
      expect(await historyInterfaces(w.s, `${folder}/a.bin`)).toContain('ftp')
    })
  })
})
