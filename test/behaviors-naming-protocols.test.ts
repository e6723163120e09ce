import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRow, makeFolder } from './helpers/file-rows.js'
import { run as runFtpClient, startSftpAndFtpServer } from './helpers/ftp.js'
import { call, dialects, grant, makeUser, type TestUser, useStarted } from './helpers/server.js'
import { sftpBatch } from './helpers/sftp.js'

/**
 * Renaming and locking behaviors, enforced by the file core, over real clients: OpenSSH sftp,
 * curl over FTP and WebDAV. A renamed upload lands under the rule's name whatever the protocol;
 * a locked folder refuses its users' mkdir and rmdir.
 */
describe.each(dialects)('renaming and locking behaviors on every protocol (%s)', (dialect) => {
  const s = useStarted(`${dialect} SFTP + FTP + WebDAV server`, () => startSftpAndFtpServer(dialect))
  let user: TestUser
  let dir: string
  let local: string

  const rule = async (p: string, behavior: string, value: unknown) => {
    const r = await call(s, 'POST', '/behaviors', { key: s.adminKey, body: { path: p, behavior, value } })
    expect(r.status, r.text).toBe(201)
  }
  const curl = (...args: string[]) =>
    runFtpClient('curl', ['-sS', '--max-time', '30', '-u', `partner:${user.password}`, ...args])
  const ftpUrl = (p: string) => `ftp://127.0.0.1:${s.ftpPort}/${p}`
  const dav = async (args: string[]) => {
    const r = await curl('-w', '\n%{http_code}', ...args)
    const at = r.stdout.lastIndexOf('\n')
    return { status: Number(r.stdout.slice(at + 1)), body: r.stdout.slice(0, at) }
  }

  beforeAll(async () => {
    user = await makeUser(s, { username: 'partner' })
    await makeFolder(s, 'renamed')
    await makeFolder(s, 'locked/kept')
    await grant(s, user.id, 'renamed', 'full')
    await grant(s, user.id, 'locked', 'full')
    await rule('renamed', 'override_upload_filename', { filename_override_pattern: '{username}_{name}' })
    await rule('locked', 'lock_subfolders', { level: 'children' })
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-naming-'))
    local = path.join(dir, 'rows.csv')
    fs.writeFileSync(local, 'a,b\n1,2\n')
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('SFTP (OpenSSH sftp): the upload lands renamed; mkdir and rmdir in a locked folder are denied', async () => {
    const put = await sftpBatch(s.sftp.port, 'partner', user.password, [`put ${local} /renamed/sftp.csv`])
    expect(put.code, put.stderr).toBe(0)
    expect((await findRow(s, 'renamed/partner_sftp.csv'))?.size).toBe(8)
    expect(await findRow(s, 'renamed/sftp.csv')).toBeUndefined()
    const mkdir = await sftpBatch(s.sftp.port, 'partner', user.password, ['mkdir /locked/sftp'])
    expect(mkdir.code).not.toBe(0)
    expect(mkdir.stderr).toMatch(/Permission denied/)
    expect(await findRow(s, 'locked/sftp')).toBeUndefined()
    const rmdir = await sftpBatch(s.sftp.port, 'partner', user.password, ['rmdir /locked/kept'])
    expect(rmdir.code).not.toBe(0)
    expect(await findRow(s, 'locked/kept')).toBeDefined()
  })

  it('FTP (curl): the upload lands renamed; MKD and RMD in a locked folder are 550', async () => {
    expect((await curl('-T', local, ftpUrl('renamed/ftp.csv'))).code).toBe(0)
    expect((await findRow(s, 'renamed/partner_ftp.csv'))?.size).toBe(8)
    const mkd = await curl('-v', '-Q', 'MKD /locked/ftp', ftpUrl(''))
    expect(mkd.code).not.toBe(0)
    expect(mkd.stderr).toMatch(/< 550 locked is locked/)
    expect(await findRow(s, 'locked/ftp')).toBeUndefined()
    const rmd = await curl('-v', '-Q', 'RMD /locked/kept', ftpUrl(''))
    expect(rmd.stderr).toMatch(/< 550 locked is locked/)
    expect(await findRow(s, 'locked/kept')).toBeDefined()
  })

  it('WebDAV (curl): PUT lands renamed; MKCOL and DELETE of a folder in a locked folder are 423', async () => {
    const davUrl = (p: string) => `${s.url}/dav/${p}`
    expect((await dav(['-T', local, davUrl('renamed/dav.csv')])).status).toBe(201)
    expect((await findRow(s, 'renamed/partner_dav.csv'))?.size).toBe(8)
    const mkcol = await dav(['-X', 'MKCOL', davUrl('locked/dav')])
    expect(mkcol.status).toBe(423)
    expect(mkcol.body).toContain('processing-failure/folder-locked')
    expect(await findRow(s, 'locked/dav')).toBeUndefined()
    expect((await dav(['-X', 'DELETE', davUrl('locked/kept')])).status).toBe(423)
    expect(await findRow(s, 'locked/kept')).toBeDefined()
  })
})
