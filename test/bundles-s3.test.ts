import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { download, putBytes, target } from './helpers/files.js'
import { s3ForTests, storeSettings } from './helpers/s3-cases.js'
import { call, dialects, useServer } from './helpers/server.js'

const s3 = s3ForTests()

/**
 * A share link's outsider side on the S3 store, in both of its modes: the bytes a visitor
 * downloads and zips come from the bucket, and what a visitor uploads lands there.
 */
describe.each(
  dialects.flatMap((dialect) =>
    (['proxy', 'direct'] as const).map((mode) => ({
      dialect,
      mode,
      env: storeSettings(s3, `shares-${mode}`, mode)[1]!.env,
    })),
  ),
)('share links on S3 ($mode mode, $dialect)', ({ dialect, env }) => {
  const s = useServer(dialect, env)
  const pub = (code: string, rest = '') => `/public/bundles/${code}${rest}`
  const as = (reg: string) => ({ headers: { 'X-Bundle-Registration-Code': reg } })
  const big = Buffer.alloc(6 * 1024 * 1024 + 17, 'w')

  it('downloads, zips and takes uploads through a link, the bytes in the bucket', async () => {
    await makeFolder(s, 'out/docs/sub')
    await makeFile(s, 'out/docs/a.txt', 'from the bucket')
    await makeFile(s, 'out/docs/sub/big.bin', big)
    await makeFolder(s, 'out/drop')
    const made = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: ['out/docs', 'out/drop'], permissions: 'read_write' },
    })
    expect(made.status).toBe(201)
    const reg = await call(s, 'POST', pub(made.body.code, '/registrations'), { body: { name: 'Sam' } })
    expect(reg.status).toBe(201)
    const code = reg.body.code as string

    const file = await call(s, 'GET', pub(made.body.code, '/files/docs/sub/big.bin'), as(code))
    expect(file.status).toBe(200)
    const got = await fetch(file.body.download_uri)
    expect(got.status).toBe(200)
    expect(Buffer.from(await got.arrayBuffer()).equals(big)).toBe(true)

    const zip = await call(s, 'POST', pub(made.body.code, '/zip'), { ...as(code), body: { paths: ['docs'] } })
    expect(zip.status).toBe(200)
    const res = await fetch(zip.body.download_uri)
    expect(res.status).toBe(200)
    const dir = mkdtempSync(join(tmpdir(), 'wharf-s3-zip-'))
    writeFileSync(join(dir, 'x.zip'), Buffer.from(await res.arrayBuffer()))
    expect(execFileSync('unzip', ['-p', join(dir, 'x.zip'), 'docs/a.txt']).toString()).toBe('from the bucket')
    expect(
      execFileSync('unzip', ['-p', join(dir, 'x.zip'), 'docs/sub/big.bin'], { maxBuffer: 64 << 20 }).equals(
        big,
      ),
    ).toBe(true)

    const path = pub(made.body.code, '/files/drop/in.txt')
    const put = await call(s, 'POST', path, { ...as(code), body: { action: 'put' } })
    expect(put.status).toBe(201)
    expect((await putBytes(put.body.upload_uri, Buffer.from('dropped in'))).status).toBe(200)
    const end = await call(s, 'POST', path, { ...as(code), body: { action: 'end', ref: put.body.ref } })
    expect(end.status).toBe(201)
    expect(end.body.path).toBe('drop/Sam/in.txt')
    expect((await download(target(s), 'out/drop/Sam/in.txt')).toString()).toBe('dropped in')
  })
})
