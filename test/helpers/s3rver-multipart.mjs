// ListParts and AbortMultipartUpload for s3rver, which has neither (it answers 405): Wharf's direct
// uploads list the parts clients sent to presigned URLs, and give up abandoned uploads. They read
// and remove s3rver's own record of an upload (a folder per upload id, a file per part with its
// md5, which s3rver answers as the part's ETag), behind s3rver's own authentication.
import fs from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)
const S3Error = require('s3rver/lib/models/error')
const authentication = require('s3rver/lib/middleware/authentication')

const xml = (s) => String(s).replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`)

export function multipartExtras(server) {
  const authenticate = authentication()
  return async function multipart(ctx, next) {
    const m = /^\/([^/]+)\/(.+)$/.exec(ctx.path)
    const listing = ctx.method === 'GET' && 'uploadId' in ctx.query && !('partNumber' in ctx.query)
    const aborting = ctx.method === 'DELETE' && 'uploadId' in ctx.query
    if (!m || !(listing || aborting)) return next()
    const [, bucket, key] = m.map((s) => decodeURIComponent(s))
    ctx.params = { bucket, key }
    await authenticate(ctx, async () => {
      const dir = path.join(
        server.store.getResourcePath(bucket, undefined, 'uploads'),
        String(ctx.query.uploadId),
      )
      const owner = await fs.readFile(path.join(dir, 'key'), 'utf8').catch(() => null)
      if (owner !== key) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.')
      if (aborting) {
        await fs.rm(dir, { recursive: true, force: true })
        ctx.status = 204
        return
      }
      const names = (await fs.readdir(dir))
        .filter((n) => /^\d+$/.test(n))
        .map(Number)
        .sort((a, b) => a - b)
      const after = Number(ctx.query['part-number-marker'] ?? 0)
      const max = Math.min(Number(ctx.query['max-parts'] ?? 1000), 1000)
      const page = names.filter((n) => n > after).slice(0, max)
      const parts = []
      for (const n of page) {
        const [stat, md5] = await Promise.all([
          fs.stat(path.join(dir, String(n))),
          fs.readFile(path.join(dir, `${n}.md5`), 'utf8'),
        ])
        parts.push(
          `<Part><PartNumber>${n}</PartNumber><LastModified>${stat.mtime.toISOString()}</LastModified>` +
            `<ETag>"${xml(md5)}"</ETag><Size>${stat.size}</Size></Part>`,
        )
      }
      const truncated = names.filter((n) => n > after).length > page.length
      ctx.type = 'application/xml'
      ctx.body =
        '<?xml version="1.0" encoding="UTF-8"?>\n' +
        `<ListPartsResult><Bucket>${xml(bucket)}</Bucket><Key>${xml(key)}</Key>` +
        `<UploadId>${xml(ctx.query.uploadId)}</UploadId><PartNumberMarker>${after}</PartNumberMarker>` +
        `<NextPartNumberMarker>${page.at(-1) ?? after}</NextPartNumberMarker><MaxParts>${max}</MaxParts>` +
        `<IsTruncated>${truncated}</IsTruncated>${parts.join('')}</ListPartsResult>`
    })
  }
}
