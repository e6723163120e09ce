import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRow } from './helpers/file-rows.js'
import { target, uploadRefusal } from './helpers/files.js'
import { run as runFtpClient, startSftpAndFtpServer } from './helpers/ftp.js'
import { call, dialects, expectError, grant, makeUser, type TestUser, useStarted } from './helpers/server.js'
import { sftpBatch } from './helpers/sftp.js'

/**
 * One folder behavior, enforced by the file core, refuses the same upload over every protocol,
 * each in its own words: REST's error body, OpenSSH sftp's failed put, FTP's 553, WebDAV's status
 * and error body; a share link's visitor meets it too.
 */
describe.each(dialects)('a folder behavior on every protocol (%s)', (dialect) => {
  const s = useStarted(`${dialect} SFTP + FTP + WebDAV server`, () => startSftpAndFtpServer(dialect))
  let user: TestUser
  let dir: string
  let pdf: string
  let csv: string

  beforeAll(async () => {
    user = await makeUser(s, { username: 'partner' })
    expect((await call(s, 'POST', '/folders/drop', { key: s.adminKey, body: {} })).status).toBe(201)
    await grant(s, user.id, 'drop', 'full')
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: {
        path: 'drop',
        behavior: 'limit_file_extensions',
        value: { extensions: ['csv'], mode: 'allow' },
      },
    })
    expect(r.status).toBe(201)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-behaviors-'))
    pdf = path.join(dir, 'invoice.pdf')
    csv = path.join(dir, 'rows.csv')
    fs.writeFileSync(pdf, '%PDF-1.4 not really')
    fs.writeFileSync(csv, 'a,b\n1,2\n')
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('REST: 422 invalid-file-type, nothing stored', async () => {
    const refused = await uploadRefusal(target(s), 'drop/rest.pdf', 'x')
    expectError(refused, 422, 'processing-failure/invalid-file-type')
    expect(refused.body.error).toContain('drop accepts only files ending in .csv')
    expect(await findRow(s, 'drop/rest.pdf')).toBeUndefined()
  })

  it('SFTP (OpenSSH sftp): permission denied, the allowed one lands', async () => {
    const refused = await sftpBatch(s.sftp.port, 'partner', user.password, [`put ${pdf} /drop/sftp.pdf`])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/"\/drop\/sftp\.pdf": Permission denied/)
    expect(await findRow(s, 'drop/sftp.pdf')).toBeUndefined()
    const allowed = await sftpBatch(s.sftp.port, 'partner', user.password, [`put ${csv} /drop/sftp.csv`])
    expect(allowed.code).toBe(0)
    expect((await findRow(s, 'drop/sftp.csv'))?.size).toBe(8)
  })

  it('FTP (curl): 553 with the rule’s words; renames into the name refused too', async () => {
    const curl = (...args: string[]) =>
      runFtpClient('curl', ['-sS', '--max-time', '30', '-u', `partner:${user.password}`, ...args])
    const url = (p: string) => `ftp://127.0.0.1:${s.ftpPort}/${p}`
    const refused = await curl('-v', '-T', pdf, url('drop/ftp.pdf'))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/< 553 drop accepts only files ending in \.csv: ftp\.pdf is refused/)
    expect(await findRow(s, 'drop/ftp.pdf')).toBeUndefined()
    expect((await curl('-T', csv, url('drop/ftp.csv'))).code).toBe(0)
    const renamed = await curl('-v', '-Q', 'RNFR /drop/ftp.csv', '-Q', 'RNTO /drop/ftp.pdf', url('drop/'))
    expect(renamed.code).not.toBe(0)
    expect(renamed.stderr).toMatch(/< 553 /)
    expect(await findRow(s, 'drop/ftp.csv')).toBeDefined()
  })

  it('WebDAV (curl): 422 with the error type in the body; MOVE into the name refused too', async () => {
    const curl = async (args: string[]) => {
      const r = await runFtpClient('curl', [
        '-sS',
        '-u',
        `partner:${user.password}`,
        '-w',
        '\n%{http_code}',
        ...args,
      ])
      const at = r.stdout.lastIndexOf('\n')
      return { status: Number(r.stdout.slice(at + 1)), body: r.stdout.slice(0, at) }
    }
    const url = (p: string) => `${s.url}/dav/${p}`
    const refused = await curl(['-T', pdf, url('drop/dav.pdf')])
    expect(refused.status).toBe(422)
    expect(refused.body).toContain('<W:type>processing-failure/invalid-file-type</W:type>')
    expect(await findRow(s, 'drop/dav.pdf')).toBeUndefined()
    expect((await curl(['-T', csv, url('drop/dav.csv')])).status).toBe(201)
    const moved = await curl(['-X', 'MOVE', '-H', `Destination: ${url('drop/dav.pdf')}`, url('drop/dav.csv')])
    expect(moved.status).toBe(422)
    expect(moved.body).toContain('<W:type>processing-failure/invalid-file-type</W:type>')
    expect(await findRow(s, 'drop/dav.csv')).toBeDefined()
  })

  it('share links: a visitor’s upload is refused by a recursive rule on the shared folder', async () => {
    await call(s, 'POST', '/folders/shared', { key: s.adminKey, body: {} })
    const rule = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: {
        path: 'shared',
        behavior: 'limit_file_extensions',
        value: { extensions: ['csv'] },
        recursive: true,
      },
    })
    expect(rule.status).toBe(201)
    const link = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: ['shared'], permissions: 'read_write' },
    })
    expect(link.status).toBe(201)
    const reg = await call(s, 'POST', `/public/bundles/${link.body.code}/registrations`, {
      body: { name: 'Visitor' },
    })
    expect(reg.status).toBe(201)
    const put = (name: string) =>
      call(s, 'POST', `/public/bundles/${link.body.code}/files/shared/${name}`, {
        headers: { 'X-Bundle-Registration-Code': reg.body.code },
        body: { action: 'put' },
      })
    expectError(await put('visitor.pdf'), 422, 'processing-failure/invalid-file-type')
    expect((await put('visitor.csv')).status).toBe(201)
  })
})
