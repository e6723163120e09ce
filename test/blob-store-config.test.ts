import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).problems
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`)
}

describe('blob store settings', () => {
  it('keeps bytes on the local disk unless told otherwise', () => {
    expect(loadConfig({}).blobs).toEqual({ store: 'disk', s3: undefined })
    // S3 settings alone do not switch stores.
    expect(loadConfig({ S3_BUCKET: 'files' }).blobs).toEqual({ store: 'disk', s3: undefined })
  })

  it('reads the S3 settings, ending the prefix with a slash', () => {
    const c = loadConfig({
      BLOB_STORE: 's3',
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      S3_REGION: 'eu-west-3',
      S3_BUCKET: 'wharf-files',
      S3_PREFIX: '/site-a/blobs',
      S3_FORCE_PATH_STYLE: 'true',
    })
    expect(c.blobs).toEqual({
      store: 's3',
      s3: {
        endpoint: 'http://127.0.0.1:9000',
        region: 'eu-west-3',
        bucket: 'wharf-files',
        prefix: 'site-a/blobs/',
        forcePathStyle: true,
        transferMode: 'direct',
      },
    })
  })

  it('reads S3_TRANSFER_MODE=proxy', () => {
    expect(
      loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'files', S3_TRANSFER_MODE: 'proxy' }).blobs.s3?.transferMode,
    ).toBe('proxy')
  })

  it('defaults to AWS itself, its region variable, no prefix and virtual-host addressing', () => {
    expect(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'files' }).blobs.s3).toEqual({
      endpoint: undefined,
      region: 'us-east-1',
      bucket: 'files',
      prefix: '',
      forcePathStyle: false,
      transferMode: 'direct',
    })
    expect(
      loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'files', AWS_REGION: 'ap-south-1' }).blobs.s3?.region,
    ).toBe('ap-south-1')
  })

  it('refuses each bad value on its own', () => {
    const cases: [Record<string, string>, string][] = [
      [{ BLOB_STORE: 'tape' }, 'BLOB_STORE'],
      [{ BLOB_STORE: 'S3', S3_BUCKET: 'files' }, 'BLOB_STORE'],
      [{ BLOB_STORE: 's3' }, 'S3_BUCKET'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'Files' }, 'S3_BUCKET'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'ab' }, 'S3_BUCKET'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'files', S3_ENDPOINT: 'minio:9000' }, 'S3_ENDPOINT'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'files', S3_PREFIX: 'a//b' }, 'S3_PREFIX'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'files', S3_FORCE_PATH_STYLE: 'maybe' }, 'S3_FORCE_PATH_STYLE'],
      [{ BLOB_STORE: 's3', S3_BUCKET: 'files', S3_TRANSFER_MODE: 'redirect' }, 'S3_TRANSFER_MODE'],
    ]
    for (const [env, name] of cases) {
      const problems = problemsOf(env)
      expect(problems, JSON.stringify(env)).toHaveLength(1)
      expect(problems[0]!.startsWith(`${name} `), problems[0]).toBe(true)
    }
  })
})
