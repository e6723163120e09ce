import type { Migration } from 'kysely'
import * as m001 from './001-platform.js'
import * as m002 from './002-session-expiry.js'
import * as m003 from './003-files.js'
import * as m004 from './004-webhooks.js'
import * as m005 from './005-billing.js'
import * as m006 from './006-exports.js'
import * as m007 from './007-public-keys.js'
import * as m008 from './008-checksums.js'
import * as m009 from './009-shared-node-state.js'
import * as m010 from './010-upload-expiry.js'
import * as m011 from './011-outbox-writes.js'
import * as m012 from './012-outbox-indexes.js'
import * as m013 from './013-login-defender.js'
import * as m014 from './014-mail-outbox.js'
import * as m015 from './015-bundles.js'
import * as m016 from './016-bundle-mail.js'
import * as m017 from './017-bundle-visits.js'
import * as m018 from './018-behaviors.js'
import * as m019 from './019-behavior-webhooks.js'
import * as m020 from './020-groups.js'
import * as m021 from './021-password-rules.js'
import * as m022 from './022-access.js'
import * as m023 from './023-two-factor.js'
import * as m024 from './024-webhook-endpoints.js'
import * as m025 from './025-webhook-ordering.js'
import * as m026 from './026-read-only-admins.js'
import * as m027 from './027-file-sha256.js'
import * as m028 from './028-webhook-order-restart.js'

/** Every migration in order; the names are stored in the database, so never rename one. */
export const migrations: Record<string, Migration> = {
  '001-platform': m001,
  '002-session-expiry': m002,
  '003-files': m003,
  '004-webhooks': m004,
  '005-billing': m005,
  '006-exports': m006,
  '007-public-keys': m007,
  '008-checksums': m008,
  '009-shared-node-state': m009,
  '010-upload-expiry': m010,
  '011-outbox-writes': m011,
  '012-outbox-indexes': m012,
  '013-login-defender': m013,
  '014-mail-outbox': m014,
  '015-bundles': m015,
  '016-bundle-mail': m016,
  '017-bundle-visits': m017,
  '018-behaviors': m018,
  '019-behavior-webhooks': m019,
  '020-groups': m020,
  '021-password-rules': m021,
  '022-access': m022,
  '023-two-factor': m023,
  '024-webhook-endpoints': m024,
  '025-webhook-ordering': m025,
  '026-read-only-admins': m026,
  '027-file-sha256': m027,
  '028-webhook-order-restart': m028,
}
