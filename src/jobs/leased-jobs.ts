import crypto from 'node:crypto'
import os from 'node:os'
import { CompiledQuery, type Kysely, type RawBuilder, sql, type Transaction, type UpdateObject } from 'kysely'
import type { PreparedArrays, RawSqlite } from '../db/database.js'
import type { SqlDialect } from '../db/dialects/dialect.js'
import type { Database } from '../db/schema.js'

/** The tables whose rows are jobs: each has `id`, `lease_owner` and `lease_until`. */
export type JobTable = 'webhook_notifications' | 'exports' | 'checksum_jobs' | 'mail_outbox'

/** A parameter of a claim, by name: its place in the statement is found once, when it is compiled. */
export type Param = (name: string) => RawBuilder<unknown>

/**
 * One way of claiming rows: which are due, in what order, what else the claim sets. Conditions
 * that should reach the query planner as literals (to pick a partial index) are written as SQL;
 * values that change from claim to claim are parameters, so the statement's text never changes
 * and is compiled (and on SQLite prepared) once.
 */
export interface ClaimShape {
  /** Names the compiled statement: the same key must always build the same SQL. */
  key: string
  /** The rows that are due, beside a lease that is absent or ran out. */
  due(p: Param): RawBuilder<unknown>
  /** `order by` of the due rows (the oldest first). */
  orderBy: string
  /** Further assignments of the claim, after the lease's. */
  set?(p: Param): RawBuilder<unknown>
  /** A condition the claimed rows must still meet when they are updated. */
  recheck?: RawBuilder<unknown>
  /** The columns the claim returns, in this order. */
  returning: readonly string[]
  /**
   * Where the dialect has a writable WITH and claims run as prepared statements (PostgreSQL):
   * more columns after `returning`'s, from a join of the claimed rows (`claimed`) with other
   * tables, read in the same statement (and snapshot) as the claim. Elsewhere the claim returns
   * `returning` only and the caller reads the rest itself.
   */
  joined?: { from: string; columns: readonly string[] }
}

export interface LeasedJobsOptions {
  /** How long a claim lasts unless renewed. */
  leaseMs: number
  now: () => number
  /** SQLite: the connection itself, for claims many times a second (no Kysely executor). */
  sqlite?: RawSqlite | undefined
  /** PostgreSQL: prepared statements with rows as arrays, for the same claims. */
  prepared?: PreparedArrays | undefined
  /** A condition every update of a held row also checks (an export must still be building). */
  held?: RawBuilder<unknown>
}

interface Compiled {
  sql: string
  /** The name of the parameter in each placeholder, in order. */
  names: string[]
}

/**
 * Rows as jobs that workers in any number of processes share: a worker claims due rows with a
 * lease (`FOR UPDATE SKIP LOCKED` where the dialect has it, so two never take the same row),
 * renews the lease while it works, and changes a row only while it still holds the claim. A
 * worker that dies leaves its claims to run out; on a database only one process uses, they are
 * released at start.
 */
export class LeasedJobs<T extends JobTable> {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`
  readonly #compiled = new Map<string, Compiled>()
  readonly #db: Kysely<any>

  constructor(
    db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    private readonly table: T,
    private readonly opts: LeasedJobsOptions,
  ) {
    this.#db = db as Kysely<any>
  }

  get leaseMs(): number {
    return this.opts.leaseMs
  }

  /**
   * Claims up to `limit` due rows for this worker. `values` gives the shape's own parameters;
   * `fromArray` builds a row from the driver's array form (SQLite's connection, PostgreSQL's
   * prepared statements), which costs a fraction of the driver's objects.
   */
  async claim<R>(
    shape: ClaimShape,
    limit: number,
    values: Record<string, unknown> = {},
    fromArray?: (a: unknown[]) => R,
  ): Promise<R[]> {
    const now = this.opts.now()
    const compiled = this.#compile(shape)
    const all: Record<string, unknown> = {
      ...values,
      owner: this.owner,
      until: now + this.opts.leaseMs,
      now,
      limit,
    }
    const params = compiled.names.map((n) => all[n])
    const raw = this.opts.sqlite
    if (raw && fromArray) {
      const stmt = raw.statement(compiled.sql)
      return raw.hold(() => (stmt.raw(true).all(params) as unknown[][]).map(fromArray))
    }
    if (this.opts.prepared && fromArray)
      return (await this.opts.prepared(compiled.sql, params)).map(fromArray)
    return (await this.#db.executeQuery<R>(CompiledQuery.raw(compiled.sql, params))).rows
  }

  /**
   * Sets columns of a row while this worker holds its claim; false once the claim is lost. `trx`:
   * in a transaction of the caller's, with other statements that must commit with it.
   */
  async update(id: number, set: UpdateObject<Database, T>, trx?: Transaction<Database>): Promise<boolean> {
    let q = ((trx as Kysely<any> | undefined) ?? this.#db)
      .updateTable(this.table as string)
      .set(set as Record<string, unknown>)
      .where('id', '=', id)
    if (this.opts.held) q = q.where(this.opts.held as RawBuilder<boolean>)
    const res = await q.where('lease_owner', '=', this.owner).executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  /** Extends the lease of a held row; false once the claim is lost. */
  renew(id: number): Promise<boolean> {
    const lease = { lease_until: this.opts.now() + this.opts.leaseMs }
    return this.update(id, lease as unknown as UpdateObject<Database, T>)
  }

  /** Hands a held row back (with `set` applied), for any worker to claim at once. */
  release(id: number, set: UpdateObject<Database, T> = {} as UpdateObject<Database, T>): Promise<boolean> {
    return this.update(id, { ...set, lease_owner: null, lease_until: null } as UpdateObject<Database, T>)
  }

  /**
   * At start, where one process owns the database (the dialect's `singleProcess`): the claims of
   * rows in `state` can only be left over from a process that died, and are void at once.
   */
  async releaseLeftOver(state: RawBuilder<unknown>): Promise<void> {
    await this.#db
      .updateTable(this.table as string)
      .set({ lease_owner: null, lease_until: null })
      .where(state as RawBuilder<boolean>)
      .where('lease_owner', 'is not', null)
      .execute()
  }

  /** The one claim statement, built for a shape and compiled once. */
  #compile(shape: ClaimShape): Compiled {
    const known = this.#compiled.get(shape.key)
    if (known) return known
    // Each placeholder's value is its name here; the names' order is the parameters' order.
    const p: Param = (name) => sql.val(name)
    const table = sql.table(this.table)
    const extra = shape.set ? sql`, ${shape.set(p)}` : sql``
    const locked = this.dialect.skipLocked ? sql` for update skip locked` : sql``
    const recheck = shape.recheck ? sql` and ${shape.recheck}` : sql``
    const due = sql`select id from ${table}
      where ${shape.due(p)} and (lease_until is null or lease_until < ${p('now')})
      order by ${sql.raw(shape.orderBy)} limit ${p('limit')}${locked}`
    let query = sql`update ${table} set lease_owner = ${p('owner')}, lease_until = ${p('until')}${extra}
    where ${this.dialect.idIn(due)}${recheck}
    returning ${sql.raw(shape.returning.join(', '))}`
    if (this.dialect.writableCte) {
      // Only with arrays: as objects, the joined columns' names could hide the claimed ones'.
      const joined = this.opts.prepared ? shape.joined : undefined
      const columns = [...shape.returning.map((c) => `claimed.${c}`), ...(joined?.columns ?? [])]
      // A claim lost with a crash of the database server only lets the job run again (each job
      // may run more than once anyway): its commit need not wait for the disk, which on a busy
      // outbox was most of a claim's time, while the slots it fills stood idle.
      const fast = this.dialect.asyncCommit ? sql` where ${this.dialect.asyncCommit}` : sql``
      query = sql`with claimed as (${query})
    select ${sql.raw(columns.join(', '))} from claimed ${sql.raw(joined?.from ?? '')}${fast}`
    }
    const built = query.compile(this.#db)
    const compiled = { sql: built.sql, names: built.parameters as string[] }
    // Shapes are few (a failing site's claim adds one per number of sites left out).
    if (this.#compiled.size >= 256) this.#compiled.clear()
    this.#compiled.set(shape.key, compiled)
    return compiled
  }
}
