import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import {
  BROWSER_SUITE,
  expectNoOutsideRequests,
  hasBrowser,
  newPage,
  shown,
  signIn,
  textOf,
  webSuite,
} from '../helpers/browser.js'
import { ADMIN_PASSWORD, call, makeUser } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: users and folder permissions', BROWSER_SUITE, () => {
  const web = webSuite()

  const userRow = (username: string) =>
    web.s.container.db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst()
  const permissionsOf = async (userId: number) =>
    (await call(web.s, 'GET', `/permissions?user_id=${userId}`, { key: web.s.adminKey })).body as {
      id: number
      path: string
      permission: string
    }[]
  const rowOf = (page: Page, username: string) =>
    page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: username, exact: true }) })

  it('creates a user, grants and revokes a folder permission, disables and deletes the user', async () => {
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/users`)

    // Create: a refusal of the server is shown in words, then the corrected form goes through.
    await page.getByRole('button', { name: 'New user' }).click()
    const form = page.getByRole('form', { name: 'New user' })
    // The opened form takes the keyboard focus.
    const focused =
      "document.activeElement === document.querySelector('#new-user-title').closest('form').querySelector('input')"
    await expect.poll(() => page.evaluate<boolean>(focused)).toBe(true)
    await form.getByLabel('Username', { exact: true }).fill('carol has spaces')
    await form.getByLabel('Name', { exact: true }).fill('Carol Jones')
    await form.getByLabel('Email').fill('carol@example.com')
    await form.getByLabel('Password', { exact: true }).fill('carol-password-1')
    await form.getByLabel('Shared/Bot user').check()
    await form.getByRole('button', { name: 'Create user' }).click()
    expect(await textOf(form.getByRole('alert'))).toContain('username may contain only letters, digits')
    expect(await userRow('carol has spaces')).toBeUndefined()
    await form.getByLabel('Username', { exact: true }).fill('carol')
    await form.getByRole('button', { name: 'Create user' }).click()
    expect(await textOf(page.getByRole('status').filter({ hasText: 'created' }))).toBe('User carol created.')
    const carol = (await userRow('carol'))!
    expect(carol).toMatchObject({
      name: 'Carol Jones',
      email: 'carol@example.com',
      site_admin: 0,
      self_managed: 0,
    })
    expect(await textOf(rowOf(page, 'carol'))).toContain('Shared/Bot')

    // Grant a folder permission from the user's row.
    await rowOf(page, 'carol').getByRole('link', { name: 'Folder permissions of carol' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'Folder permissions' }))
    const grant = page.getByRole('form', { name: 'Grant a folder permission' })
    await expect.poll(() => grant.getByLabel('User or group').inputValue()).toBe(`u:${carol.id}`)
    await grant.getByLabel('Folder path').fill('/projects/2026/')
    await grant.getByLabel('Permission').selectOption('readonly')
    await grant.getByRole('button', { name: 'Grant' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Granted' }))
    expect(await permissionsOf(carol.id)).toMatchObject([{ path: 'projects/2026', permission: 'readonly' }])
    const permRow = page.getByRole('row').filter({ hasText: '/projects/2026' })
    expect(await textOf(permRow)).toContain('Read only')

    // A grant the server refuses (the root folder) says why.
    await grant.getByLabel('Folder path').fill('/')
    await grant.getByRole('button', { name: 'Grant' }).click()
    expect(await textOf(grant.getByRole('alert'))).toContain("path can't be the root folder")
    expect(await permissionsOf(carol.id)).toHaveLength(1)

    // Revoke, with a confirming second click.
    await permRow.getByRole('button', { name: 'Revoke readonly on /projects/2026 from carol' }).click()
    await permRow.getByRole('button', { name: 'Confirm revoke' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Revoked' }))
    expect(await permissionsOf(carol.id)).toEqual([])
    await shown(page.getByText('No folder permissions match.'))

    // Disable.
    await page
      .getByRole('navigation', { name: 'Users and permissions' })
      .getByRole('link', { name: 'Users' })
      .click()
    await rowOf(page, 'carol').getByRole('button', { name: 'Edit carol' }).click()
    const edit = page.getByRole('form', { name: 'Edit carol' })
    await edit.getByLabel(/^Disabled/).check()
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'saved' }))
    expect((await userRow('carol'))!.disabled).toBe(1)
    await shown(rowOf(page, 'carol').getByText('Disabled'))

    // Delete: the admin's own password is asked for; a wrong one is refused in words.
    await rowOf(page, 'carol').getByRole('button', { name: 'Delete carol' }).click()
    const del = page.getByRole('form', { name: 'Delete carol?' })
    await del.getByLabel('Your own password, to confirm').fill('not-my-password')
    await del.getByRole('button', { name: 'Delete carol' }).click()
    expect(await textOf(del.getByRole('alert'))).toContain('Your password was not accepted')
    expect(await userRow('carol')).toBeDefined()
    await del.getByLabel('Your own password, to confirm').fill(ADMIN_PASSWORD)
    await del.getByRole('button', { name: 'Delete carol' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'deleted' }))
    expect(await userRow('carol')).toBeUndefined()
    // The list is read again after the deletion's answer: its row goes once that read is shown.
    await expect.poll(() => rowOf(page, 'carol').count()).toBe(0)
    // The deletion is the web interface's, in the history.
    const action = await web.s.container.db
      .selectFrom('actions')
      .select(['interface', 'display'])
      .where('action', '=', 'user_destroy')
      .executeTakeFirstOrThrow()
    expect(action).toEqual({ interface: 'web', display: 'Deleted user carol' })
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it("changes a user's password only with the admin's own password, and never offers to delete oneself", async () => {
    const dave = await makeUser(web.s, { username: 'dave' })
    const page = await newPage(web.browser, web.s, { width: 390, height: 844 })
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/users`)
    await rowOf(page, 'dave').getByRole('button', { name: 'Edit dave' }).click()
    const edit = page.getByRole('form', { name: 'Edit dave' })
    await edit.getByLabel('New password').fill('dave-new-password')
    await edit.getByLabel('Your own password').fill(ADMIN_PASSWORD)
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'saved' }))
    const login = (password: string) =>
      call(web.s, 'POST', '/sessions', { body: { username: 'dave', password } })
    expect((await login('dave-new-password')).status).toBe(201)
    expect((await login(dave.password)).status).toBe(401)

    // The admin's own row: deleting is disabled, and so are the rights one cannot take from oneself.
    const admin = rowOf(page, 'admin')
    expect(await admin.getByRole('button', { name: 'Delete admin' }).isDisabled()).toBe(true)
    await admin.getByRole('button', { name: 'Edit admin' }).click()
    const self = page.getByRole('form', { name: 'Edit admin' })
    expect(await self.getByLabel(/^Site administrator/).isDisabled()).toBe(true)
    expect(await self.getByLabel(/^Disabled/).isDisabled()).toBe(true)
    // Nothing is wider than the phone's screen but the table, which scrolls in its frame.
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.goto(`${web.s.url}/#/users/permissions`)
    await shown(page.getByRole('form', { name: 'Grant a folder permission' }))
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.context().close()
  })

  it('creates a group with members and rights, edits its members, administrators and rights, grants it a folder, and deletes it', async () => {
    const dana = await makeUser(web.s, { username: 'dana' })
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/users`)
    await page
      .getByRole('navigation', { name: 'Users and permissions' })
      .getByRole('link', { name: 'Groups' })
      .click()
    await shown(page.getByRole('heading', { level: 1, name: 'Groups' }))
    const form = page.getByRole('form', { name: 'New group' })
    await expect.poll(() => form.getByRole('option', { name: 'dana' }).count()).toBe(1)
    await form.getByLabel('Members').selectOption([String(dana.id)])

    // A refusal of the server (a blank name) is shown in words.
    await form.getByLabel('Group name').fill(' ')
    await form.getByRole('button', { name: 'Create group' }).click()
    expect(await textOf(form.getByRole('alert'))).toContain("can't be blank")

    await form.getByLabel('Group name').fill('designers')
    // The group's rights and addresses limit its members.
    await form.getByLabel('FTP', { exact: true }).uncheck()
    await form.getByLabel('WebDAV', { exact: true }).uncheck()
    await form.getByLabel('Allowed addresses').fill('192.0.2.0/24')
    await form.getByRole('button', { name: 'Create group' }).click()
    expect(await textOf(page.getByRole('status').filter({ hasText: 'created' }))).toBe(
      'Group designers created.',
    )
    const groups = (await call(web.s, 'GET', '/groups', { key: web.s.adminKey })).body
    expect(groups).toMatchObject([
      {
        name: 'designers',
        user_ids: String(dana.id),
        ftp_permission: false,
        sftp_permission: true,
        dav_permission: false,
        restapi_permission: true,
        allowed_ips: '192.0.2.0/24',
      },
    ])
    const row = page.getByRole('row').filter({ hasText: 'designers' })
    expect(await textOf(row)).toContain('dana')

    // Edit: another member, dana made the group's administrator, notes; a blank name is refused.
    const erin = await makeUser(web.s, { username: 'erin' })
    await page.reload()
    await row.getByRole('button', { name: 'Edit group designers' }).click()
    const edit = page.getByRole('form', { name: 'Edit group designers' })
    await expect.poll(() => edit.getByRole('option', { name: 'erin' }).count()).toBe(1)
    await edit.getByLabel('Members').selectOption([String(dana.id), String(erin.id)])
    await edit.getByRole('group', { name: 'Group administrators' }).getByLabel('dana').check()
    await edit.getByLabel('Notes').fill('Design team')
    // The form shows the group's rights as they are; WebDAV given back, the addresses changed.
    expect(await edit.getByLabel('FTP', { exact: true }).isChecked()).toBe(false)
    expect(await edit.getByLabel('Allowed addresses').inputValue()).toBe('192.0.2.0/24')
    await edit.getByLabel('WebDAV', { exact: true }).check()
    await edit.getByLabel('Allowed addresses').fill('198.51.100.0/24')
    await edit.getByLabel('Group name').fill(' ')
    await edit.getByRole('button', { name: 'Save group' }).click()
    expect(await textOf(edit.getByRole('alert'))).toContain("can't be blank")
    await edit.getByLabel('Group name').fill('designers')
    await edit.getByRole('button', { name: 'Save group' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Group designers saved.' }))
    const [saved] = (await call(web.s, 'GET', '/groups', { key: web.s.adminKey })).body
    expect(saved).toMatchObject({
      name: 'designers',
      notes: 'Design team',
      user_ids: `${dana.id},${erin.id}`,
      admin_ids: String(dana.id),
      ftp_permission: false,
      dav_permission: true,
      allowed_ips: '198.51.100.0/24',
    })
    await expect.poll(() => textOf(row)).toContain('erin')

    // The group's folder permissions: granted to the group, listed under its filter.
    await row.getByRole('link', { name: 'Folder permissions of group designers' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'Folder permissions' }))
    const grant = page.getByRole('form', { name: 'Grant a folder permission' })
    await expect.poll(() => grant.getByLabel('User or group').inputValue()).toBe(`g:${saved.id}`)
    await grant.getByLabel('Folder path').fill('designs')
    await grant.getByLabel('Permission').selectOption('readonly')
    await grant.getByRole('button', { name: 'Grant' }).click()
    await shown(
      page.getByRole('status').filter({ hasText: 'Granted read only on /designs to group designers.' }),
    )
    const granted = (await call(web.s, 'GET', '/permissions', { key: web.s.adminKey })).body
    expect(granted).toMatchObject([
      { path: 'designs', group_id: saved.id, user_id: null, permission: 'readonly' },
    ])
    await shown(page.getByRole('row').filter({ hasText: '/designs' }).getByText('group designers'))
    await page
      .getByRole('navigation', { name: 'Users and permissions' })
      .getByRole('link', { name: 'Groups' })
      .click()

    await row.getByRole('button', { name: 'Delete group designers' }).click()
    await row.getByRole('button', { name: 'Confirm delete' }).click()
    await shown(page.getByText('No groups yet.'))
    expect((await call(web.s, 'GET', '/groups', { key: web.s.adminKey })).body).toEqual([])
    await page.context().close()
  })

  it('tells a user who is not a site admin that the page is not theirs', async () => {
    const u = await makeUser(web.s)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await page.goto(`${web.s.url}/#/users`)
    // The navigation has no Users page for them, so the interface shows their first page instead.
    await shown(page.getByRole('heading', { level: 1 }))
    expect(await page.getByRole('button', { name: 'New user' }).count()).toBe(0)
    await page.context().close()
  })

  it('makes a read-only site administrator on the user form, who then sees the users and changes nothing', async () => {
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/users`)
    await page.getByRole('button', { name: 'New user' }).click()
    const form = page.getByRole('form', { name: 'New user' })
    await form.getByLabel('Username', { exact: true }).fill('audrey')
    await form.getByLabel('Password', { exact: true }).fill('audrey-password-1')
    await form.getByLabel('Read-only site administrator').check()
    await form.getByRole('button', { name: 'Create user' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'created' }))
    expect(await userRow('audrey')).toMatchObject({ readonly_site_admin: 1, site_admin: 0 })
    expect(await textOf(rowOf(page, 'audrey'))).toContain('Read-only admin')
    await page.context().close()

    const auditor = await newPage(web.browser, web.s)
    await signIn(auditor, web.s, 'audrey', 'audrey-password-1')
    await auditor.goto(`${web.s.url}/#/users`)
    expect(await textOf(auditor.getByRole('status').filter({ hasText: 'Read-only' }))).toContain(
      'cannot change anything',
    )
    // Every user is listed, as for a site admin; creating one is refused in words.
    await shown(rowOf(auditor, 'admin'))
    await auditor.getByRole('button', { name: 'New user' }).click()
    const refused = auditor.getByRole('form', { name: 'New user' })
    await refused.getByLabel('Username', { exact: true }).fill('mallory')
    await refused.getByRole('button', { name: 'Create user' }).click()
    expect(await textOf(refused.getByRole('alert'))).toMatch(/read-only/i)
    expect(await userRow('mallory')).toBeUndefined()
    await auditor.context().close()
  })

  it('sets a user’s rights, allowed addresses, end of access and two-factor rule on the user forms', async () => {
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/users`)
    await page.getByRole('button', { name: 'New user' }).click()
    const form = page.getByRole('form', { name: 'New user' })
    await form.getByLabel('Username', { exact: true }).fill('partner')
    await form.getByLabel('Password', { exact: true }).fill('partner-password-1')
    await form.getByLabel('FTP', { exact: true }).uncheck()
    await form.getByLabel('WebDAV', { exact: true }).uncheck()
    await form.getByLabel('Allowed addresses').fill('office')
    await form.getByRole('button', { name: 'Create user' }).click()
    // The server's refusal names the field; nothing is created.
    expect(await textOf(form.getByRole('alert'))).toContain('Allowed ips must hold IPv4 or IPv6 addresses')
    expect(await userRow('partner')).toBeUndefined()
    await form.getByLabel('Allowed addresses').fill('127.0.0.2/32\n2001:db8::/32')
    await form.getByLabel('Access ends on (UTC)').fill('2099-03-04')
    await form.getByLabel('Two-factor sign-in').selectOption('always_require')
    await form.getByRole('button', { name: 'Create user' }).click()
    expect(await textOf(page.getByRole('status').filter({ hasText: 'created' }))).toBe(
      'User partner created.',
    )
    expect(await userRow('partner')).toMatchObject({
      ftp_permission: 0,
      sftp_permission: 1,
      dav_permission: 0,
      restapi_permission: 1,
      allowed_ips: '127.0.0.2/32\n2001:db8::/32',
      authenticate_until: Date.UTC(2099, 2, 4),
      require_2fa: 'always_require',
    })

    // The edit form shows what is set; clearing the list and taking the web right away is saved.
    await rowOf(page, 'partner').getByRole('button', { name: 'Edit partner' }).click()
    const edit = page.getByRole('form', { name: 'Edit partner' })
    expect(await edit.getByLabel('FTP', { exact: true }).isChecked()).toBe(false)
    expect(await edit.getByLabel('SFTP', { exact: true }).isChecked()).toBe(true)
    expect(await edit.getByLabel('Allowed addresses').inputValue()).toBe('127.0.0.2/32\n2001:db8::/32')
    expect(await edit.getByLabel('Access ends on (UTC)').inputValue()).toBe('2099-03-04')
    expect(await edit.getByLabel('Two-factor sign-in').inputValue()).toBe('always_require')
    await edit.getByLabel('Two-factor sign-in').selectOption('never_require')
    await edit.getByLabel('Allowed addresses').fill('')
    await edit.getByLabel(/^Web interface and REST API/).uncheck()
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'saved' }))
    expect(await userRow('partner')).toMatchObject({
      restapi_permission: 0,
      allowed_ips: null,
      authenticate_until: Date.UTC(2099, 2, 4),
      require_2fa: 'never_require',
    })
    // The site admin's own web right cannot be taken away from the form.
    await rowOf(page, 'admin').getByRole('button', { name: 'Edit admin' }).click()
    expect(
      await page
        .getByRole('form', { name: 'Edit admin' })
        .getByLabel(/^Web interface and REST API/)
        .isDisabled(),
    ).toBe(true)
    await page.context().close()
  })

  it('lists the banned addresses for a site admin and lifts a ban', async () => {
    const now = Date.now()
    await web.s.container.db
      .insertInto('banned_addresses')
      .values({
        site_id: web.s.container.site.id,
        address: '192.0.2.77',
        banned_at: now,
        banned_until: now + 15 * 60_000,
        failures: 20,
      })
      .execute()
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Banned addresses' })
      .click()
    await shown(page.getByRole('heading', { level: 1, name: 'Banned addresses' }))
    const row = page.getByRole('row').filter({ hasText: '192.0.2.77' })
    expect(await textOf(row.getByRole('cell').nth(3))).toBe('20')
    await row.getByRole('button', { name: 'Lift the ban of 192.0.2.77' }).click()
    await row.getByRole('button', { name: 'Yes, lift it' }).click()
    expect(await textOf(page.locator('.notice'))).toBe('The ban of 192.0.2.77 is lifted.')
    await shown(page.getByText('No address is banned.'))
    expect(await web.s.container.db.selectFrom('banned_addresses').selectAll().execute()).toEqual([])
    await page.context().close()
  })
})
