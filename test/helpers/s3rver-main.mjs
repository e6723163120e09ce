// s3rver in a process of its own, so that a test measuring its own memory measures only Wharf.
// Usage: node s3rver-main.mjs <directory> [--stock]; prints {"port":n} once listening, and exits
// when its standard input closes (the test process ended, however it ended). With --stock, without
// the multipart requests added to it (ListParts, AbortMultipartUpload), as s3rver is released.
import S3rver from 's3rver'
import './s3rver-atomic.mjs'
import { multipartExtras } from './s3rver-multipart.mjs'

const server = new S3rver({ address: '127.0.0.1', port: 0, directory: process.argv[2], silent: true })
// Before its router (the last middleware): what s3rver lacks of multipart uploads.
if (!process.argv.includes('--stock'))
  server.middleware.splice(server.middleware.length - 1, 0, multipartExtras(server))
const { port } = await server.run()
process.stdout.write(`${JSON.stringify({ port })}\n`)
process.stdin.resume()
process.stdin.on('end', () => {
  void server.close().finally(() => process.exit(0))
})
