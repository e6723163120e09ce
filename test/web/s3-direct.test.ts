import fs from 'node:fs/promises'
import { PutBucketCorsCommand } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  BROWSER_SUITE,
  expectNoOutsideRequests,
  hasBrowser,
  newPage,
  shown,
  signIn,
  webSuite,
} from '../helpers/browser.js'
import { bytes, md5 } from '../helpers/files.js'
import { rowAction } from '../helpers/files-page.js'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from '../helpers/s3-server.js'
import { call } from '../helpers/server.js'

const PART = 64 * 1024

let s3: S3TestServer
let bucket: string
beforeAll(async () => {
  s3 = await startS3Server()
  bucket = await s3.bucket()
  // What an operator sets on a bucket the web interface uploads to in direct mode.
  await s3.client.send(
    new PutBucketCorsCommand({
      Bucket: bucket,
      CORSConfiguration: {
        CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['PUT'], AllowedHeaders: ['*'] }],
      },
    }),
  )
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3_CREDENTIALS.accessKeyId)
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3_CREDENTIALS.secretAccessKey)
})
afterAll(async () => {
  vi.unstubAllEnvs()
  await s3?.close()
})

describe.skipIf(!hasBrowser)('web interface on S3 in direct mode', BROWSER_SUITE, () => {
  const web = webSuite(() => ({
    BLOB_STORE: 's3',
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: bucket,
    S3_FORCE_PATH_STYLE: 'true',
    UPLOAD_PART_SIZE: String(PART),
  }))

  it('sends the parts straight to the bucket and downloads from it', async () => {
    await call(web.s, 'POST', '/folders/inbox', { key: web.s.adminKey })
    const page = await newPage(web.browser, web.s, undefined, [s3.endpoint])
    page.setDefaultTimeout(10_000)
    const partPuts: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'PUT') partPuts.push(r.url())
    })
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/files/inbox`)
    await shown(page.getByRole('heading', { level: 1, name: 'Files' }))

    const big = bytes(PART * 2 + 12_345, 5)
    await page
      .getByLabel('Choose files to upload')
      .setInputFiles([{ name: 'big.bin', mimeType: 'application/octet-stream', buffer: big }])
    const bar = page.getByLabel('Upload progress of big.bin', { exact: true })
    const item = page.locator('li.upload', { has: bar })
    await expect.poll(() => item.locator('.upload-status').innerText(), { timeout: 15_000 }).toBe('Complete')

    // Three parts, every one to the bucket, none to Wharf.
    expect(partPuts).toHaveLength(3)
    for (const url of partPuts) expect(url.startsWith(`${s3.endpoint}/${bucket}/blobs/`)).toBe(true)
    const row = await web.s.container.db
      .selectFrom('files')
      .select(['size', 'md5'])
      .where('path', '=', 'inbox/big.bin')
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ size: big.length, md5: md5(big) })

    await shown(page.getByRole('cell', { name: 'big.bin', exact: true }))
    const [dl] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      rowAction(page, 'big.bin', 'Download'),
    ])
    expect(dl.url().startsWith(`${s3.endpoint}/${bucket}/blobs/`)).toBe(true)
    expect(dl.suggestedFilename()).toBe('big.bin')
    expect(md5(await fs.readFile((await dl.path())!))).toBe(md5(big))
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
