import crypto from 'node:crypto'
import os from 'node:os'
import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.js'

export interface JobLeaseOptions {
  /** How long the lease lasts unless renewed; it is renewed every third of that while held. */
  leaseMs: number
  now: () => number
}

/**
 * A background job that one process at a time may run, among all those sharing the database (the
 * blob janitor: two nodes sweeping at once would list and delete the same things twice). The job
 * is a row of `job_leases`; a process takes it when no one holds it or the holder's lease ran out
 * (the holder died), renews it while it works, and hands it back when done.
 */
export class JobLease {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`

  constructor(
    private readonly db: Kysely<Database>,
    private readonly name: string,
    private readonly opts: JobLeaseOptions,
  ) {}

  /**
   * Runs `work` if this process gets the lease, holding it meanwhile; null when another process
   * holds it. `held()` turns false once a renewal found the lease lost (this process stalled past
   * it), so that the work stops at its next step.
   */
  async hold<T>(work: (held: () => boolean) => Promise<T>): Promise<T | null> {
    if (!(await this.take())) return null
    let held = true
    const renewal = setInterval(() => {
      void this.renew().then(
        (ok) => {
          if (!ok) held = false
        },
        () => {
          held = false
        },
      )
    }, this.opts.leaseMs / 3)
    renewal.unref()
    try {
      return await work(() => held)
    } finally {
      clearInterval(renewal)
      // A release that fails leaves the lease to run out: the work's own outcome stands.
      await this.release().catch(() => undefined)
    }
  }

  /** Takes the lease if it is free, ran out, or is already this process's. */
  private async take(): Promise<boolean> {
    const now = this.opts.now()
    // The row exists from the first attempt on; the update below is the claim, one at a time.
    await this.db
      .insertInto('job_leases')
      .values({ name: this.name, lease_owner: null, lease_until: null })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute()
    const res = await this.db
      .updateTable('job_leases')
      .set({ lease_owner: this.owner, lease_until: now + this.opts.leaseMs })
      .where('name', '=', this.name)
      .where((eb) =>
        eb.or([
          eb('lease_owner', 'is', null),
          eb('lease_until', '<', now),
          eb('lease_owner', '=', this.owner),
        ]),
      )
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  private async renew(): Promise<boolean> {
    const res = await this.db
      .updateTable('job_leases')
      .set({ lease_until: this.opts.now() + this.opts.leaseMs })
      .where('name', '=', this.name)
      .where('lease_owner', '=', this.owner)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  private async release(): Promise<void> {
    await this.db
      .updateTable('job_leases')
      .set({ lease_owner: null, lease_until: null })
      .where('name', '=', this.name)
      .where('lease_owner', '=', this.owner)
      .execute()
  }
}
