import type { Command } from 'commander'
import type { Config } from '../config.js'

/** A database URL without its password, to show. */
function withoutPassword(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(not a URL)'
  }
}

/** What a configuration amounts to, in lines an operator reads (never a secret). */
export function describeConfig(config: Config): string[] {
  const lines = [
    `BASE_URL ${config.baseUrl}`,
    `HTTP ${config.host}:${config.port}`,
    config.databaseUrl
      ? `database PostgreSQL ${withoutPassword(config.databaseUrl)}`
      : `database SQLite ${config.dataDir}/wharf.sqlite`,
    config.blobs.store === 's3'
      ? `files S3 bucket ${config.blobs.s3?.bucket} prefix "${config.blobs.s3?.prefix}" (${config.blobs.s3?.transferMode})${config.blobs.s3?.endpoint ? ` at ${config.blobs.s3.endpoint}` : ''}`
      : `files on disk ${config.dataDir}/storage`,
    config.sftp.enabled ? `SFTP ${config.sftp.host}:${config.sftp.port}` : 'SFTP off',
    config.ftp.enabled ? `FTP ${config.ftp.host}:${config.ftp.port}` : 'FTP off',
    config.dav.enabled ? `WebDAV ${config.baseUrl}${config.dav.prefix}/` : 'WebDAV off',
  ]
  return lines
}

/** `wharf config check`: the settings validated as the server would, without starting anything. */
export function registerConfigCommands(program: Command, config: () => Config): void {
  const group = program.command('config').description('check the configuration')
  group
    .command('check')
    .description(
      'validate the settings (environment and WHARF_CONFIG) as a start would, and say what they amount to; starts nothing',
    )
    .action(() => {
      // An invalid configuration throws ConfigError: one line per problem, exit 1.
      const cfg = config()
      for (const warning of cfg.warnings ?? []) console.error(`warning: ${warning}`)
      for (const line of describeConfig(cfg)) console.log(line)
      console.log('configuration is valid')
    })
}
