import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3'

/** Where the S3 store's bucket is; credentials are not here but in the AWS credential chain. */
export interface S3Settings {
  /** Absolute URL of an S3-compatible server; undefined for AWS itself. */
  endpoint: string | undefined
  region: string
  bucket: string
  /** Empty, or ending in `/`. */
  prefix: string
  /** Bucket in the path (`endpoint/bucket/key`) rather than in the host name. */
  forcePathStyle: boolean
}

/**
 * A client for the settings. Credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, instance roles…) unless given here.
 */
export function createS3Client(s3: S3Settings, credentials?: S3ClientConfig['credentials']): S3Client {
  return new S3Client({
    region: s3.region,
    ...(s3.endpoint ? { endpoint: s3.endpoint } : {}),
    forcePathStyle: s3.forcePathStyle,
    ...(credentials ? { credentials } : {}),
    // The SDK's default since 2025 adds CRC checksums (and aws-chunked bodies) to every upload,
    // which many S3-compatible servers refuse; Wharf checksums the bytes itself.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    logger: QUIET,
  })
}

/**
 * The SDK's logger. Without one it writes some warnings to the console (a part upload whose
 * client hung up: "An error was encountered in a non-retryable streaming request"), outside
 * Wharf's log; the error itself reaches Wharf, which answers and logs it. `info` and `error` are
 * left out: the SDK calls them optionally, and so skips building a record of every request.
 */
const QUIET = { debug() {}, warn() {} } as unknown as NonNullable<S3ClientConfig['logger']>
