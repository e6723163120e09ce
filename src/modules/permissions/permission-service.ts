import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'

export class PermissionService {
  constructor(
    readonly db: Kysely<Database>,
    readonly now: () => number = Date.now,
  ) {}
}
