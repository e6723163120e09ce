import type { Migration } from 'kysely'
import * as m001 from './001-platform.js'

/** Every migration in order; the names are stored in the database, so never rename one. */
export const migrations: Record<string, Migration> = {
  '001-platform': m001,
}
