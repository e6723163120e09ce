import type { Command } from 'commander'
import type { Config } from '../config.js'
import { openBlobStore } from '../container.js'
import { openDatabase } from '../db/database.js'
import { verifyBlobs } from './blob-verify.js'
import { backupSite } from './site-backup.js'
import { restoreSite } from './site-restore.js'

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`

/** `wharf backup DIR`, `wharf restore DIR` and `wharf verify` (docs/operations.md, "Backup and restore"). */
export function registerBackupCommands(program: Command, config: () => Config): void {
  program
    .command('backup')
    .description(
      'write a consistent copy of the site (database and files) into an empty folder; safe while Wharf runs',
    )
    .argument('<dir>', 'a new or empty folder')
    .action(async (dir: string) => {
      const { dir: target, manifest } = await backupSite({ config: config() }, dir)
      const where = manifest.store.copied
        ? 'copied'
        : `listed in objects.txt (bucket ${manifest.store.bucket})`
      console.log(
        `backed up the ${manifest.database.dialect} database and ${manifest.blobs.count} files' blobs (${mib(manifest.blobs.bytes)}, ${where}) into ${target}`,
      )
      if (manifest.blobs.missing.length > 0) {
        console.error(
          `warning: ${manifest.blobs.missing.length} blob(s) the database refers to were missing from the store (listed in manifest.json); run wharf verify`,
        )
        process.exitCode = 1
      }
    })

  program
    .command('restore')
    .description('restore a backup into an empty DATA_DIR / database (refuses a non-empty one)')
    .argument('<dir>', 'a folder written by wharf backup')
    .action(async (dir: string) => {
      const cfg = config()
      const opened = cfg.blobs.store === 's3' ? await openBlobStore(cfg, undefined, Date.now) : null
      try {
        const prefix = `${cfg.blobs.s3?.prefix ?? ''}blobs/`
        const report = await restoreSite(
          { config: cfg },
          dir,
          opened ? (objectKey) => opened.store.size(objectKey.slice(prefix.length)) : undefined,
        )
        console.log(
          `restored the ${report.manifest.database.dialect} database of ${report.manifest.created_at} and ${report.restoredBlobs} blob(s); ${report.checkedFiles} file(s) matched SHA256SUMS`,
        )
        if (report.missingObjects.length > 0) {
          console.error(
            `warning: ${report.missingObjects.length} object(s) the backup names are not in the bucket (first: ${report.missingObjects[0]}); restore them from the bucket's versions`,
          )
          process.exitCode = 1
        }
      } finally {
        opened?.close()
      }
    })

  program
    .command('verify')
    .description(
      "check that every file's blob is in the store with its size and MD5, and list orphans; changes nothing without --repair",
    )
    .option('--quick', 'check sizes only, without reading the blobs', false)
    .option('--repair', 'delete orphan blobs (those nothing refers to)', false)
    .action(async (o: { quick: boolean; repair: boolean }) => {
      const cfg = config()
      const database = openDatabase({ url: cfg.databaseUrl, dataDir: cfg.dataDir })
      const opened = await openBlobStore(cfg, undefined, Date.now)
      try {
        const report = await verifyBlobs(database, opened.store, {
          quick: o.quick,
          repair: o.repair,
          onProblem: (p) => {
            if (p.kind === 'missing') console.log(`missing  ${p.key}  ${p.path}`)
            else if (p.kind === 'size')
              console.log(`size     ${p.key}  ${p.path}  expected ${p.expected}, found ${p.found}`)
            else if (p.kind === 'md5')
              console.log(`md5      ${p.key}  ${p.path}  expected ${p.expected}, found ${p.found}`)
            else console.log(`orphan   ${p.key}${p.removed ? '  removed' : ''}`)
          },
        })
        console.log(
          `checked ${report.files} file(s) and ${report.exports} export(s) against ${report.blobs} blob(s): ${report.missing} missing, ${report.mismatched} damaged, ${report.orphans} orphan(s)${o.repair ? `, ${report.removed} removed` : ''}`,
        )
        if (!report.ok) process.exitCode = 1
      } finally {
        opened.close()
        await database.close()
      }
    })
}
