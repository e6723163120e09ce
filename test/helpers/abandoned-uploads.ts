import { spawn } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import type { Kysely } from 'kysely'
import { expect } from 'vitest'
import type { Database } from '../../src/db/schema.js'

/** An upload in progress, as the database names it. */
export interface OpenUpload {
  id: number
  ref: string
}

/** What is left of an upload: its record, its parts' records, its staged part files, temporary files. */
export interface UploadRemains {
  record: boolean
  partRecords: number
  stagedParts: string[]
  temporary: string[]
}

/** An upload discarded whole: the remains a test expects once it is gone. */
export const NOTHING_LEFT: UploadRemains = { record: false, partRecords: 0, stagedParts: [], temporary: [] }

/** Waits until the upload of `filePath` has at least `parts` parts staged and recorded. */
export async function stagedUpload(
  db: Kysely<Database>,
  filePath: string,
  parts: number,
): Promise<OpenUpload> {
  let found: OpenUpload | undefined
  await expect
    .poll(
      async () => {
        const u = await db
          .selectFrom('uploads')
          .select(['id', 'ref'])
          .where('path', '=', filePath)
          .executeTakeFirst()
        if (!u) return 0
        found = u
        const rows = await db
          .selectFrom('upload_parts')
          .select('part_number')
          .where('upload_id', '=', u.id)
          .execute()
        return rows.length
      },
      { timeout: 20_000, interval: 50 },
    )
    .toBeGreaterThanOrEqual(parts)
  return found!
}

/** The upload's remains; `storage` is DATA_DIR/storage. */
export async function remains(
  db: Kysely<Database>,
  storage: string,
  upload: OpenUpload,
): Promise<UploadRemains> {
  const record = await db.selectFrom('uploads').select('id').where('id', '=', upload.id).executeTakeFirst()
  const parts = await db
    .selectFrom('upload_parts')
    .select('part_number')
    .where('upload_id', '=', upload.id)
    .execute()
  const ls = (dir: string) => fs.readdir(dir).catch(() => [] as string[])
  return {
    record: record !== undefined,
    partRecords: parts.length,
    stagedParts: (await ls(path.join(storage, 'parts', upload.ref))).sort(),
    temporary: await ls(path.join(storage, 'tmp')),
  }
}

/** A client program in a process group of its own, so that a kill reaches what it started (sftp's ssh). */
export function startClient(
  cmd: string,
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv } = {},
) {
  const child = spawn(cmd, args, {
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { ...process.env, ...opts.env },
  })
  let stderr = ''
  child.stderr!.on('data', (d) => {
    stderr += d
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.stdin!.end(opts.input ?? '')
  return {
    /** What the client wrote to standard error (for failure messages). */
    stderr: () => stderr,
    /** Still running (a client that finished or failed early has nothing left to kill). */
    running: () => child.exitCode === null && child.signalCode === null,
    /** SIGKILLs the whole group, as a crash or `kill -9` would, and waits for the client to be gone. */
    async kill(): Promise<void> {
      try {
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL')
      } catch (err) {
        // Gone between the check and the kill.
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
      }
      await exited
    },
  }
}
