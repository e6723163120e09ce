import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { SessionService } from '../sessions/session-service.js'

export class UserService {
  constructor(
    readonly db: Kysely<Database>,
    readonly sessions: SessionService,
    readonly now: () => number = Date.now,
  ) {}
}
