import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../src/identity/principal.js'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import { pollHistoryExport } from './helpers/history-export-fixtures.js'
import {
  adminUserId,
  call,
  dialects,
  makeKey,
  makeUser,
  type TestServer,
  useServer,
} from './helpers/server.js'
import { sshKeyPair } from './helpers/sftp.js'
import {
  type BuiltRequest,
  build,
  type Draw,
  enumValues,
  letters,
  type Operation,
  operations,
  type Refs,
  seeded,
} from './helpers/swagger-requests.js'
import { startWebhookRecorder, type WebhookRecorder } from './helpers/webhook-recorder.js'

type Forced = { name: string; value: unknown } | undefined

/** Requests per operation: required parameters only, every optional one, and random subsets. */
const VARIANTS = 6

/** How many fixtures are made, or reads sent, at once. */
const BATCH = 8

/**
 * Refusals about STATE, not form: the record a request names was not in a state to take it.
 * Each is an (operation, status, type) the test expects for some of its requests; any other
 * refusal (a 400 about a parameter, a 422 naming a field, a 5xx) is a mismatch between the
 * document and the server.
 */
const STATE_ANSWERS: [ops: string | string[], status: number, type: string, message?: RegExp][] = [
  // No invoice, payment or failed webhook delivery exists on a fresh site.
  ['GET /invoices/{id}', 404, 'not-found'],
  ['GET /payments/{id}', 404, 'not-found'],
  ['POST /action_webhook_failures/{id}/retry', 404, 'not-found'],
  // Signed links: without the expires and signature of a link the server issued (and no
  // billing document exists to have one), the link is not valid. The route's credentials are
  // the signature, so this is an authentication answer, as a missing API key is elsewhere.
  ['GET /billing_documents/{id}', 401, 'not-authenticated/invalid-or-expired-code'],
  ['GET /export_files/{id}', 401, 'not-authenticated/invalid-or-expired-code'],
  // search_all searches the whole site, so it is taken on the root folder only: the answer is
  // about which folder {path} names (its description says so).
  ['GET /folders/{path}', 400, 'bad-request/search-all-on-child-path'],
  // The user already has that permission on that folder (the fixture grants full).
  ['POST /permissions', 422, 'processing-failure/model-save-error', /^Permission full on \S+ already exists/],
  // "part + parts - 1 must not exceed 10000" (the description of part): a rule between two
  // fields that Swagger 2.0 cannot state, met when both are drawn near their maximum.
  [
    ['POST /file_actions/begin_upload/{path}', 'POST /files/{path}'],
    400,
    'bad-request/part-number-too-large',
    /^Part numbers go up to 10000$/,
  ],
  // "a site-wide key: full only" (the description of permission_set): a rule between two fields.
  [
    'POST /api_keys',
    422,
    'processing-failure/model-save-error',
    /^Permission set must be full for a site-wide key$/,
  ],
  // "if both are given they must agree" (the description of bundle_permission): two fields.
  [
    ['POST /users', 'PATCH /users/{id}'],
    422,
    'processing-failure/model-save-error',
    /^Bundle permission must equal attachments_permission/,
  ],
  // Share links: the paths drawn are new names (no such file), or not the named user's to read.
  [['POST /bundles', 'PATCH /bundles/{id}'], 404, 'not-found/bundle-path-not-found'],
  [['POST /bundles', 'PATCH /bundles/{id}'], 403, 'not-authorized/read-permission-required'],
  // "not after expires_at" (the description of start_access_on_date): a rule between two fields.
  [
    ['POST /bundles', 'PATCH /bundles/{id}'],
    422,
    'processing-failure/model-save-error',
    /^Start access on date must not be after expires_at$/,
  ],
  // The server under test has no SMTP_URL: what would send mail says so (after the form is checked).
  [
    ['POST /bundles/{id}/share', 'POST /bundle_recipients', 'POST /inbox_recipients'],
    422,
    'processing-failure/mail-not-configured',
  ],
  // Inboxes: a drawn filter[folder_behavior_id] names no inbox (the fixtures' ids are others).
  ['GET /inbox_uploads', 404, 'not-found/inbox-not-found'],
  // "at least one address" between to and recipients (the description of the share).
  ['POST /bundles/{id}/share', 400, 'bad-request/request-params-required', /^to or recipients is required$/],
  // A share link's visitor: without the (optional) header no visit; the bundle is read-only, so
  // uploads are refused; the paths drawn for a ZIP are not in the share. Its download and ZIP
  // links are signed: a drawn token is no link the server issued.
  [
    [
      'GET /public/bundles/{code}/folders',
      'GET /public/bundles/{code}/folders/{path}',
      'GET /public/bundles/{code}/files/{path}',
      'POST /public/bundles/{code}/files/{path}',
      'POST /public/bundles/{code}/zip',
    ],
    401,
    'not-authenticated/bundle-registration-code-failed',
  ],
  ['POST /public/bundles/{code}/files/{path}', 403, 'not-authorized/write-permission-required'],
  ['POST /public/bundles/{code}/zip', 404, 'not-found/bundle-path-not-found'],
  [
    ['GET /public/bundle_downloads/{token}/{name}', 'GET /public/bundle_zips/{token}/{name}'],
    401,
    'not-authenticated/invalid-or-expired-code',
  ],
  // A user's ZIP: the paths drawn are new names; its link is signed like the others.
  ['POST /file_actions/zip_download', 404, 'not-found/file-not-found'],
  ['GET /zip_downloads/{token}/{name}', 401, 'not-authenticated/invalid-or-expired-code'],
  // A behavior's value is JSON text whose settings depend on its type (the description of value):
  // a rule between two fields.
  [['POST /behaviors', 'PATCH /behaviors/{id}'], 422, 'processing-failure/model-save-error', /^Value/],
  // Group names are unique: a drawn name an earlier request already took.
  [
    ['POST /groups', 'PATCH /groups/{id}'],
    422,
    'processing-failure/model-save-error',
    /^Name has already been taken/,
  ],
  // A folder with files in it is deleted only with recursive=true.
  ['DELETE /resource/{id}', 422, 'processing-failure/folder-not-empty'],
  // "If both are given they must agree" (the description of bundle_permission).
  [
    ['POST /users', 'PATCH /users/{id}'],
    422,
    'processing-failure/model-save-error',
    /^Bundle permission must equal attachments_permission/,
  ],
  // A drawn otp is not the code the fixture's authenticator shows.
  ['PATCH /two_factor_authentication_methods/{id}', 401, 'not-authenticated/one-time-password-incorrect'],
]

/** Rules between fields that the document states in their descriptions only. */
const RELATIONS = {
  // "If given, must equal password"; "if both are given they must agree".
  sameAs: { password_confirmation: 'password', bundle_permission: 'attachments_permission' },
  // "end (with ref) finishes it"; modified_at_datetime: "With type: …".
  needs: { 'action=end': 'ref', modified_at_datetime: 'type' },
}

describe.each(dialects)('Requests built from the Swagger document (%s)', (dialect) => {
  let doc: any
  let hook: WebhookRecorder
  let adminId: number
  const exports: Refs = {}

  // Webhook URLs the requests set point at the loopback recorder, which only this range allows.
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    hook = await startWebhookRecorder(() => ({ status: 200 }))
    doc = (await call(s, 'GET', '/swagger_doc')).body
    adminId = await adminUserId(s)
    // PATCH /site sets the billing contact too, which needs billing_permission.
    await s.container.db
      .updateTable('users')
      .set({ billing_permission: 1 })
      .where('id', '=', adminId)
      .execute()
    // Exports are never deleted: one of each serves every request.
    const key = (await makeKey(s, adminId)).key
    const h = await call(s, 'POST', '/history_exports', { key, body: {} })
    const ready = await pollHistoryExport(s, h.body.id, { key })
    const a = await call(s, 'POST', '/action_notification_exports', { key, body: {} })
    const link = new URL(ready.results_url)
    Object.assign(exports, {
      history_export_id: h.body.id,
      action_notification_export_id: a.body.id,
      export_file_id: Number(link.pathname.split('/').pop()),
      expires: link.searchParams.get('expires')!,
      signature: link.searchParams.get('signature')!,
    })
  })
  afterAll(async () => {
    await hook?.close()
  })

  let count = 0
  /**
   * Fresh records for one request, so no request depends on what an earlier one changed. The
   * number is taken before the first await: fixtures are made several at a time.
   */
  async function fixtures(op: Operation): Promise<{ refs: Refs; key: string; top: string }> {
    const n = ++count
    const user = await makeUser(s, { username: `fx${letters(n)}` })
    const key = await makeKey(s, user.id)
    const top = `fx${letters(n)}`
    const folder = `${top}/dir`
    const dir = await makeFolder(s, folder)
    const file = await makeFile(s, `${folder}/file.txt`)
    const perm = await s.container.services.permissions.create(operatorPrincipal(s.container.site.id), {
      path: folder,
      user_id: user.id,
      permission: 'full',
    })
    const admin = await makeKey(s, adminId)
    // A key registers once per site: each request gets its own, and one already on the user.
    const sshKey = (): string => sshKeyPair().public
    const publicKey = await s.container.services.publicKeys.create(operatorPrincipal(s.container.site.id), {
      title: 'fixture',
      public_key: sshKey(),
      user_id: user.id,
    })
    const bundle = await s.container.services.bundles.create(operatorPrincipal(s.container.site.id), {
      paths: [folder],
      user_id: user.id,
    })
    // An inbox: a write-only share link of the same folder.
    const inbox = await s.container.services.bundles.create(operatorPrincipal(s.container.site.id), {
      paths: [folder],
      user_id: user.id,
      permissions: 'write',
    })
    const notification = await s.container.services.bundleMail.createNotification(
      operatorPrincipal(s.container.site.id),
      { bundle_id: bundle.id, notify_user_id: user.id },
    )
    const behavior = await s.container.services.behaviors.create(operatorPrincipal(s.container.site.id), {
      path: folder,
      behavior: 'limit_filename_length',
      value: { max_length: 200 },
    })
    // A group; the user is its member, except for the request that adds them.
    const group = await s.container.services.groups.create(operatorPrincipal(s.container.site.id), {
      name: `fx-group-${letters(n)}`,
      ...(op.method === 'POST' && op.path === '/group_users' ? {} : { user_ids: String(user.id) }),
    })
    const membership = await s.container.db
      .selectFrom('group_users')
      .select('id')
      .where('group_id', '=', group.id)
      .where('user_id', '=', user.id)
      .executeTakeFirst()
    // An authenticator being enrolled by the administrator, whose key the requests send.
    const method = await call(s, 'POST', '/two_factor_authentication_methods', {
      key: admin.key,
      body: { method_type: 'totp' },
    })
    const upload = `${folder}/up.txt`
    const ids: Record<string, number | string> = {
      api_keys: key.id,
      users: user.id,
      permissions: perm.id,
      resources: file.id,
      resource: op.method === 'DELETE' && n % 2 ? dir.id : file.id,
      action_notification_exports: exports['action_notification_export_id']!,
      history_exports: exports['history_export_id']!,
      export_files: exports['export_file_id']!,
      public_keys: publicKey.id,
      bundles: bundle.id,
      bundle_notifications: notification.id,
      behaviors: behavior.id,
      groups: group.id,
      group_users: membership?.id ?? 1,
      two_factor_authentication_methods: method.body.id,
    }
    if (op.path.startsWith('/events/')) ids['events'] = await anEvent(s)
    const first = op.path.split('/')[1]!
    const refs: Refs = {
      id: ids[first] ?? 1,
      // The exports are the administrator's: their results are listed for that user.
      user_id: /export/.test(op.path) ? adminId : user.id,
      history_export_id: exports['history_export_id']!,
      action_notification_export_id: exports['action_notification_export_id']!,
      public_key: sshKey(),
      bundle_id: bundle.id,
      inbox_id: inbox.id,
      folder_behavior_id: inbox.id,
      notify_user_id: user.id,
      group_id: group.id,
      group_name: group.name,
    }
    // Folders for the folder routes, copies and moves (so structure=true has one to copy) and
    // the records that name a folder; the file for the others; a new path for creations.
    const onFolder =
      /^\/(folders|history\/folders|behaviors\/folders|file_actions\/(copy|move))\//.test(op.path) ||
      /^\/(folders|api_keys|permissions|behaviors)$/.test(op.path)
    refs['path'] = onFolder ? folder : file.path
    // A share link's routes: its code, a visit of it, and paths relative to the share ("dir").
    if (op.path.startsWith('/public/bundles/')) {
      const visit = await s.container.services.bundleVisitors.register(
        s.container.site.id,
        bundle.code,
        {},
        '127.0.0.1',
      )
      refs['code'] = bundle.code
      refs['x-bundle-registration-code'] = visit.code!
      refs['path'] = op.path.includes('/folders/') ? 'dir' : 'dir/file.txt'
    }
    // Who a permission is for, and whose password logs in: existing users.
    if (op.path === '/permissions') refs['username'] = user.username
    if (op.path === '/sessions') Object.assign(refs, { username: user.username, password: user.password })
    if (op.method === 'POST' && op.path === '/folders/{path}') refs['path'] = `${folder}/new`
    if (/^\/files\/|begin_upload/.test(op.path) && op.method === 'POST') {
      refs['path'] = upload
      const begun = await call(s, 'POST', `/file_actions/begin_upload/${upload}`, {
        key: admin.key,
        body: {},
      })
      refs['ref'] = begun.body[0].ref
    }
    if (op.path === '/webhook_settings/test') {
      const saved = await call(s, 'PATCH', '/webhook_settings', { key: admin.key, body: { url: hook.url } })
      expect(saved.status).toBe(200)
    }
    if (op.path === '/banned_addresses/{address}') {
      // A running ban of its own for each request's delete to lift (fixtures are made before
      // any of their requests is sent).
      const address = `192.0.2.${(n % 254) + 1}`
      const now = Date.now()
      await s.container.db
        .insertInto('banned_addresses')
        .values({
          site_id: s.container.site.id,
          address,
          banned_at: now,
          banned_until: now + 60_000,
          failures: 20,
        })
        .onConflict((oc) => oc.columns(['site_id', 'address']).doNothing())
        .execute()
      refs['address'] = address
    }
    if (op.path === '/export_files/{id}')
      Object.assign(refs, { expires: exports['expires'], signature: exports['signature'] })
    if (op.path === '/downloads/{token}/{name}') {
      const shown = await call(s, 'GET', `/files/${file.path}`, { key: admin.key })
      const [token, name] = new URL(shown.body.download_uri).pathname.split('/').slice(-2)
      Object.assign(refs, { token: decodeURIComponent(token!), name: decodeURIComponent(name!) })
    }
    return { refs, key: admin.key, top }
  }

  it('never refuses a request for the form of a field the document allows', {
    timeout: 600_000,
  }, async () => {
    const rng = seeded(20260101)
    const ops = operations(doc)
      // PUT /upload_parts takes the bytes of a part as application/octet-stream, not parameters.
      .filter((op) => !(op.method === 'PUT' && op.path.startsWith('/upload_parts/')))
      // Deletions last: nothing sent after them needs what they remove.
      .sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'))
    const failures: string[] = []
    const seen = new Set<string>()
    const seq = { n: 0 }
    let sent = 0
    for (const op of ops) {
      const name = `${op.method} ${op.path}`
      // Operations whose security is [] take no credentials (a key would stop a login).
      const open = Array.isArray(op.security) && op.security.length === 0
      const send = async ({ fx, r }: { fx: { key: string }; r: BuiltRequest }): Promise<void> => {
        const auth = open ? {} : { key: fx.key }
        const url = await withCursor(s, r.url, auth)
        const res = await call(s, r.method, url, {
          ...auth,
          headers: r.headers,
          ...(r.body ? { body: r.body } : {}),
        })
        sent++
        if (res.status < 400) return
        const type = res.body?.type
        // A state answer is fine, when it is exactly one the list names for this operation.
        const state = STATE_ANSWERS.find(
          ([o, st, t, m]) =>
            [o].flat().includes(name) && st === res.status && t === type && (!m || m.test(res.body?.error)),
        )
        if (state) {
          seen.add(`${state[0]} ${res.status} ${type}`)
          return
        }
        const errors = JSON.stringify(res.body?.model_errors ?? res.body?.errors ?? '')
        failures.push(
          `${name} -> ${res.status} ${type} ${res.body?.error ?? ''} ${errors} | ${url} ${JSON.stringify(r.body ?? '')}`,
        )
      }
      const sentValues = new Set<string>()
      // The variants; then each enum value none of them sent, alone with the required parameters.
      let round: { v: number; only: Forced }[] = Array.from({ length: VARIANTS }, (_, v) => ({
        v,
        only: undefined,
      }))
      for (let first = true; round.length > 0; first = false) {
        // Fixtures are independent records: made a batch at a time. Requests are drawn one after
        // another in a fixed order, so the seeded values are the same on every run.
        const fxs = await inBatches(round, BATCH, () => fixtures(op))
        const built = round.map(({ v, only }, i) => {
          const fx = fxs[i]!
          const d: Draw = { rng, refs: fx.refs, seq, patterns: samples(fx.top, seq, hook.url), ...RELATIONS }
          const r = build(op, d, v, only)
          for (const x of r.sent) sentValues.add(x)
          return { fx, r }
        })
        // A read, or a change to the record its path names (each request's own fixture), changes
        // nothing another request sees: those go a batch at a time. A change to the site or its
        // collections (settings, a new record) may matter to the next request: one by one.
        if (op.method === 'GET' || op.path.includes('{')) await inBatches(built, BATCH, send)
        else for (const b of built) await send(b)
        round = first
          ? enumValues(op)
              .filter((e) => !sentValues.has(`${e.name}=${JSON.stringify(e.value)}`))
              .map((e) => ({ v: 0, only: e }))
          : []
      }
    }
    expect(failures).toEqual([])
    // The state answers did occur (which ones depends on the values drawn).
    expect(seen.size).toBeGreaterThanOrEqual(5)
    expect(ops.length).toBe(125)
    expect(sent).toBeGreaterThan(ops.length * VARIANTS)
  })
})

/** `fn` for every item, at most `size` at a time; the results in the items' order. */
async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = []
  for (let i = 0; i < items.length; i += size) {
    out.push(...(await Promise.all(items.slice(i, i + size).map(fn))))
  }
  return out
}

/**
 * A cursor is "from X-Service-Cursor-Next": the same query (per_page aside) without the cursor,
 * one record a page, gives it; when there is no next page, the cursor is left out.
 */
async function withCursor(s: TestServer, url: string, auth: { key?: string }): Promise<string> {
  const [path, qs] = url.split('?')
  const q = new URLSearchParams(qs ?? '')
  if (!q.has('cursor')) return url
  q.delete('cursor')
  q.set('per_page', '1')
  const first = await call(s, 'GET', `${path}?${q}`, auth)
  const next = first.headers.get('x-service-cursor-next')
  const out = new URLSearchParams(qs)
  if (next) out.set('cursor', next)
  else out.delete('cursor')
  const text = out.toString()
  return text ? `${path}?${text}` : path!
}

/**
 * Values for patterned fields: the first candidate that matches the document's pattern is sent,
 * so a pattern none of them matches fails the test until a candidate is added.
 */
function samples(
  top: string,
  seq: { n: number },
  hookUrl: string,
): (pattern: string, name: string) => string {
  return (pattern, name) => {
    const u = letters(seq.n)
    const candidates = [hookUrl, `${top}/dest${u}`, `mail${u}@example.com`, '1,2', `ref${u}`, '127.0.0.1/32']
    const hit = candidates.find((c) => new RegExp(pattern, 'u').test(c))
    if (hit === undefined) throw new Error(`no sample value for the pattern of ${name}: ${pattern}`)
    return hit
  }
}

/** An event of the feed (a notification of an Action, already delivered), for its routes. */
async function anEvent(s: TestServer): Promise<number> {
  const now = Date.now()
  const row = await s.container.db
    .insertInto('webhook_notifications')
    .values({
      site_id: s.container.site.id,
      action_id: 1,
      message_id: `msg_swagger_${now}_${Math.random()}`,
      operation: 'Upload',
      user_id: null,
      username: '',
      protocol: 'restapi',
      path: 'swagger/event.txt',
      sourcepath: '',
      folder: 'swagger',
      state: 'delivered',
      attempts: 1,
      max_attempts: 0,
      next_attempt_at: null,
      lease_owner: null,
      lease_until: null,
      behavior_id: null,
      url: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return Number(row.id)
}
