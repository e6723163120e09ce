import crypto from 'node:crypto'
import type { S3Client } from '@aws-sdk/client-s3'
import { onTestFinished } from 'vitest'
import type { BlobStore } from '../../src/blobs/blob-store.js'

/** The S3 client of a server's S3 store: what the server asks the bucket. */
export function serverClient(blobs: BlobStore): S3Client {
  return (blobs as unknown as { place: { client: S3Client } }).place.client
}

/** One request to the bucket: its command, and the key or key prefix it names. */
export interface SentRequest {
  command: string
  prefix: string | undefined
  key: string | undefined
}

/** Every request `client` sends from now on to the end of the test. */
export function countRequests(client: S3Client): SentRequest[] {
  const sent: SentRequest[] = []
  const name = `count-${crypto.randomBytes(4).toString('hex')}`
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Prefix?: string; Key?: string }
      sent.push({ command: context.commandName ?? '', prefix: input.Prefix, key: input.Key })
      return next(args)
    },
    { step: 'initialize', name },
  )
  onTestFinished(() => {
    client.middlewareStack.remove(name)
  })
  return sent
}
