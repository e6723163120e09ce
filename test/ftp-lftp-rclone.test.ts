import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { historyInterfaces, md5, run, uploadHook, useFtpWorld } from './helpers/ftp.js'
import { call, dialects } from './helpers/server.js'

/** How many files rclone -v says it copied. */
const transfers = (log: string) => log.match(/: Copied \(/g)?.length ?? 0

/** lftp and rclone's ftp backend, in clear and with explicit TLS, against a real Wharf. */
describe.each(dialects)('FTP with lftp and rclone (%s)', (dialect) => {
  const w = useFtpWorld(dialect)
  let dir: string
  const data = crypto.randomBytes(250_003)

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-tools-'))
    await fs.mkdir(path.join(dir, 'src'))
    await fs.writeFile(path.join(dir, 'src', 'a.bin'), data)
    await fs.writeFile(path.join(dir, 'src', 'b.txt'), 'hello from rclone\n')
    await fs.writeFile(path.join(dir, 'rclone.conf'), '')
  })
  afterAll(async () => {
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

  it('keeps the times lftp’s mirror sets with MFMT: a second mirror sends nothing, MDTM, MLST and LIST show them', async () => {
    const lftp = (commands: string) =>
      run(
        'lftp',
        [
          '-c',
          'set ftp:ssl-allow false; set net:max-retries 1; set net:timeout 15; set cmd:fail-exit true; ' +
            `open -u ${w.user.username},${w.user.password} -p ${w.s.ftpPort} 127.0.0.1; ${commands}`,
        ],
        { cwd: dir },
      )
    const local = path.join(dir, 'times')
    await fs.mkdir(local)
    await fs.writeFile(path.join(local, 'old.txt'), 'from 2000\n')
    await fs.utimes(path.join(local, 'old.txt'), 946_684_800, 946_684_800)
    const first = await lftp('mirror -R --no-perms -v times partner/times')
    expect(first).toMatchObject({ code: 0, stderr: '' })
    expect(first.stdout).toContain('Transferring file')
    const again = await lftp('mirror -R --no-perms -v times partner/times')
    expect(again).toMatchObject({ code: 0, stderr: '' })
    expect(again.stdout).not.toContain('Transferring file')
    const file = await call(w.s, 'GET', '/files/partner/times/old.txt', { key: w.s.adminKey })
    expect(file.body.provided_mtime).toBe('2000-01-01T00:00:00Z')

    const shown = await lftp(
      'cd partner/times; quote MDTM old.txt; quote MLST old.txt; ls; ' +
        'quote MFMT 20100506070809 old.txt; quote MDTM old.txt',
    )
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain('213 20000101000000\n')
    expect(shown.stdout).toContain('modify=20000101000000;')
    expect(shown.stdout).toMatch(/ 10 Jan {2}1 {2}2000 old\.txt\n/)
    expect(shown.stdout).toContain('213 Modify=20100506070809; old.txt\n')
    expect(shown.stdout).toContain('213 20100506070809\n')

    // A time is not a content change: the listener heard of the upload only.
    const hook = await uploadHook(w, 'partner/times/old.txt')
    expect(hook).toMatchObject({ operation: 'Upload', protocol: 'ftp' })
    expect(w.listener.received.filter((r) => r.json?.path === 'partner/times/old.txt')).toHaveLength(1)

    const refused = await lftp(
      [
        'quote MFMT 20100506070809 /private',
        'quote MFMT 20100506070809 partner/times/missing.txt',
        'quote MFMT 20101306070809 partner/times/old.txt',
        'quote MFMT 2010 partner/times/old.txt',
        'quote MFMT 20100506070809',
      ].join('; '),
    )
    expect(refused.stdout.split('\n').map((l) => l.slice(0, 4))).toEqual([
      '550 ',
      '550 ',
      '501 ',
      '501 ',
      '501 ',
      '',
    ])
    const unchanged = await call(w.s, 'GET', '/files/partner/times/old.txt', { key: w.s.adminKey })
    expect(unchanged.body.provided_mtime).toBe('2010-05-06T07:08:09Z')
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

    it('sets each file’s time with MFMT, so a second copy transfers nothing', async () => {
      const folder = `partner/again-${mode}`
      await fs.utimes(path.join(dir, 'src', 'b.txt'), 1_000_000_000, 1_000_000_000)
      const first = await rclone('copy', '-v', path.join(dir, 'src'), `${remote}${folder}`)
      expect(first.code).toBe(0)
      expect(transfers(first.stderr)).toBe(2)
      const b = await call(w.s, 'GET', `/files/${folder}/b.txt`, { key: w.s.adminKey })
      expect(b.body.provided_mtime).toBe('2001-09-09T01:46:40Z')
      const again = await rclone('copy', '-v', path.join(dir, 'src'), `${remote}${folder}`)
      expect(again.code).toBe(0)
      expect(again.stderr).not.toMatch(/Copied/)
      expect(transfers(again.stderr)).toBe(0)
    })
  })
})
