// Whole-object writes for s3rver, as S3 has them. s3rver writes an object's file in place (two
// PUTs of one key at once interleave their bytes) and answers before the file is flushed; S3
// shows each PUT whole or not at all. Here a PUT writes a temporary file, renames it over the
// object once closed, then writes its metadata, one PUT of a key after the other.
//
// The same for UploadPart: s3rver writes a part's file in place too, and one whose request was
// cut short stayed, half written and without its md5, where S3 keeps nothing of it.
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'

const require = createRequire(import.meta.url)
const FilesystemStore = require('s3rver/lib/stores/filesystem')

/** The PUT in progress for each bucket/key. */
const writing = new Map()

async function putWhole(store, object) {
  const objectPath = store.getResourcePath(object.bucket, object.key, 'object')
  await fs.promises.mkdir(path.dirname(objectPath), { recursive: true })
  const temporary = `${objectPath}.${crypto.randomBytes(6).toString('hex')}.partial`
  const hash = crypto.createHash('md5')
  let size = 0
  try {
    if (Buffer.isBuffer(object.content)) {
      await fs.promises.writeFile(temporary, object.content)
      hash.update(object.content)
      size = object.content.length
    } else {
      const count = new Transform({
        transform(chunk, _enc, done) {
          hash.update(chunk)
          size += chunk.length
          done(null, chunk)
        },
      })
      await pipeline(object.content, count, fs.createWriteStream(temporary))
    }
    await fs.promises.rename(temporary, objectPath)
  } catch (err) {
    await fs.promises.rm(temporary, { force: true })
    throw err
  }
  const md5 = hash.digest('hex')
  await store.putMetadata(object.bucket, object.key, object.metadata, md5)
  return { size, md5 }
}

FilesystemStore.prototype.putObject = function putObject(object) {
  const id = `${object.bucket}/${object.key}`
  const before = writing.get(id) ?? Promise.resolve()
  const mine = before.catch(() => undefined).then(() => putWhole(this, object))
  writing.set(id, mine)
  const forget = () => {
    if (writing.get(id) === mine) writing.delete(id)
  }
  mine.then(forget, forget)
  return mine
}

/** A part written whole: a temporary file renamed over the part once closed, then its md5. */
FilesystemStore.prototype.putPart = async function putPart(bucket, uploadId, partNumber, content) {
  const partPath = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId, String(partNumber))
  await fs.promises.mkdir(path.dirname(partPath), { recursive: true })
  const temporary = `${partPath}.${crypto.randomBytes(6).toString('hex')}.partial`
  const hash = crypto.createHash('md5')
  let size = 0
  const count = new Transform({
    transform(chunk, _enc, done) {
      hash.update(chunk)
      size += chunk.length
      done(null, chunk)
    },
  })
  try {
    await pipeline(content, count, fs.createWriteStream(temporary))
    await fs.promises.rename(temporary, partPath)
  } catch (err) {
    await fs.promises.rm(temporary, { force: true })
    throw err
  }
  const md5 = hash.digest('hex')
  await fs.promises.writeFile(`${partPath}.md5`, md5)
  return { size, md5 }
}
