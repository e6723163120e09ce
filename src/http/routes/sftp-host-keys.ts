import { Type } from '@sinclair/typebox'
import type { HttpContext } from '../http-context.js'
import type { Routes } from '../route-types.js'
import { errorResponses, IdParams } from '../schemas.js'

export const SftpHostKeySchema = Type.Object(
  {
    id: Type.Integer({
      description: '1: ed25519, 2: RSA (generated keys); keys given by setting in their order',
    }),
    name: Type.String({ description: 'The key type, e.g. ssh-ed25519' }),
    fingerprint_md5: Type.String({ description: 'Colon-separated hex' }),
    fingerprint_sha256: Type.String({
      description: 'Unpadded base64, as ssh-keygen -l shows it after "SHA256:"',
    }),
  },
  { $id: 'SftpHostKey', title: 'SftpHostKey' },
)

const tags = ['sftp_host_keys']

/** The SFTP server's host keys, read-only, for site admins. */
export function sftpHostKeyRoutes(c: HttpContext): Routes {
  const svc = c.services.hostKeys
  return async (app) => {
    app.get(
      '/sftp_host_keys',
      {
        config: { xml: ['sftp-host-keys', 'sftp-host-key'] },
        schema: {
          summary: 'List the SFTP server’s host keys and their fingerprints',
          tags,
          response: { 200: Type.Array(SftpHostKeySchema), ...errorResponses },
        },
      },
      async (request) => svc.list(request.principal),
    )

    app.get(
      '/sftp_host_keys/:id',
      {
        config: { xml: 'sftp-host-key' },
        schema: {
          summary: 'Show one SFTP host key',
          tags,
          params: IdParams,
          response: { 200: SftpHostKeySchema, ...errorResponses },
        },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )
  }
}
