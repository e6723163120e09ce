import crypto from 'node:crypto'
import { createRequire } from 'node:module'

let ssh2Loaded: typeof import('ssh2') | undefined
/**
 * ssh2 (~2.5 MiB of memory and its native bindings), loaded with the first key parsed or made:
 * a server without SFTP that is never given a key does not hold it.
 */
export function ssh2(): typeof import('ssh2') {
  ssh2Loaded ??= createRequire(import.meta.url)('ssh2') as typeof import('ssh2')
  return ssh2Loaded
}

/** A public key as OpenSSH writes it, without its comment, and the fingerprints of its blob. */
export interface SshPublicKey {
  /** e.g. `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`. */
  type: string
  /** `<type> <base64 blob>`. */
  openssh: string
  /** MD5 of the blob as colon-separated hex, as `ssh-keygen -l -E md5` prints it (without `MD5:`). */
  fingerprintMd5: string
  /** SHA-256 of the blob in unpadded base64, as `ssh-keygen -l` prints it (without `SHA256:`). */
  fingerprintSha256: string
}

/** Fingerprints of a key blob (the bytes the SSH protocol carries). */
export function describeBlob(blob: Buffer): SshPublicKey {
  const typeLength = blob.readUInt32BE(0)
  const type = blob.subarray(4, 4 + typeLength).toString('latin1')
  const md5 = crypto.createHash('md5').update(blob).digest('hex')
  return {
    type,
    openssh: `${type} ${blob.toString('base64')}`,
    fingerprintMd5: md5.replace(/(..)(?!$)/g, '$1:'),
    fingerprintSha256: crypto.createHash('sha256').update(blob).digest('base64').replace(/=+$/, ''),
  }
}

/**
 * A public key in OpenSSH form (`ssh-ed25519 AAAA… comment`), RFC 4716 or PEM, or null when
 * the text is none of these or holds a private key.
 */
export function parsePublicKey(text: string): SshPublicKey | null {
  const parsed = ssh2().utils.parseKey(text.trim())
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (!key || key instanceof Error || key.isPrivateKey()) return null
  return describeBlob(key.getPublicSSH())
}
