import { Type } from '@sinclair/typebox'
import { GROUP_LIST, GROUP_USER_LIST } from '../../modules/groups/group-model.js'
import { ALLOWED_IPS, AllowedIpsText, RIGHT } from '../access-schemas.js'
import { deleteById } from '../delete-by-id.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { EchoId, errorResponses, FreeText, Id, IdParams, listQuery, Nullable } from '../schemas.js'

export const GroupSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    notes: Nullable(Type.String()),
    user_ids: Type.String({ description: 'Member user ids, separated by commas' }),
    admin_ids: Type.String({ description: 'User ids of the group’s administrators, separated by commas' }),
    usernames: Type.String({ description: 'Member usernames, separated by commas' }),
    allowed_ips: Nullable(Type.String({ description: ALLOWED_IPS })),
    ftp_permission: Type.Boolean({ description: RIGHT('FTP') }),
    sftp_permission: Type.Boolean({ description: RIGHT('SFTP') }),
    dav_permission: Type.Boolean({ description: RIGHT('WebDAV') }),
    restapi_permission: Type.Boolean({ description: RIGHT('the REST API and the web interface') }),
    site_id: Type.Integer(),
  },
  { $id: 'Group', title: 'Group' },
)

export const GroupUserSchema = Type.Object(
  {
    id: Type.Integer(),
    group_id: Type.Integer(),
    group_name: Type.String(),
    user_id: Type.Integer(),
    usernames: Type.String({ description: 'The member’s username' }),
    admin: Type.Boolean({ description: 'The member administers the group’s members' }),
  },
  { $id: 'GroupUser', title: 'GroupUser' },
)

const Ids = (description: string) =>
  Type.String({
    maxLength: 100_000,
    pattern: '^[0-9, ]*$',
    description: `${description}, separated by commas`,
  })

const fields = {
  notes: Type.Optional(Nullable(FreeText(65_536, 'lines', 'Notes about the group'))),
  user_ids: Type.Optional(Ids('Member user ids (replace the members)')),
  admin_ids: Type.Optional(Ids('User ids of the group’s administrators (members too)')),
  allowed_ips: Type.Optional(Nullable(AllowedIpsText())),
  ftp_permission: Type.Optional(Type.Boolean({ description: RIGHT('FTP') })),
  sftp_permission: Type.Optional(Type.Boolean({ description: RIGHT('SFTP') })),
  dav_permission: Type.Optional(Type.Boolean({ description: RIGHT('WebDAV') })),
  restapi_permission: Type.Optional(
    Type.Boolean({ description: RIGHT('the REST API and the web interface') }),
  ),
}
const Name = FreeText(255, 'line', 'Group name, unique in any case')

const CreateBody = Type.Object(
  { name: Name, ...fields },
  { additionalProperties: false, title: 'GroupCreate' },
)

/** What `save()` of the Files.com SDK sends back besides the fields: accepted and left alone. */
const Echo = Type.Optional(Type.Unknown({ readOnly: true }))
const UpdateBody = Type.Object(
  { id: EchoId, name: Type.Optional(Name), ...fields, usernames: Echo, site_id: Echo },
  { additionalProperties: false, title: 'GroupUpdate' },
)

const MemberBody = Type.Object(
  {
    id: EchoId,
    group_id: Type.Optional(Id('The group')),
    user_id: Type.Optional(Id('The user')),
    admin: Type.Optional(Type.Boolean({ description: 'The member administers the group’s members' })),
    group_name: Echo,
    usernames: Echo,
  },
  { additionalProperties: false, title: 'GroupUserBody' },
)

const CreateMemberBody = Type.Object(
  {
    group_id: Id('The group'),
    user_id: Id('The user to add'),
    admin: Type.Optional(Type.Boolean({ description: 'The member administers the group’s members' })),
  },
  { additionalProperties: false, title: 'GroupUserCreate' },
)

const GroupListQuery = listQuery({}, GROUP_LIST)
const MemberListQuery = listQuery(
  {
    group_id: Type.Optional(Id('Memberships of this group')),
    user_id: Type.Optional(Id('Memberships of this user')),
  },
  GROUP_USER_LIST,
)

const groupTags = ['groups']
const memberTags = ['group_users']

export function groupRoutes(c: HttpContext): Routes {
  const svc = c.services.groups
  return async (app) => {
    app.get(
      '/groups',
      {
        config: { xml: ['groups', 'group'] },
        schema: {
          summary: 'List groups (site admins: all; others: their own)',
          tags: groupTags,
          querystring: GroupListQuery,
          response: { 200: Type.Array(GroupSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )

    app.get(
      '/groups/:id',
      {
        config: { xml: 'group' },
        schema: {
          summary: 'Show a group',
          tags: groupTags,
          params: IdParams,
          response: { 200: GroupSchema, ...errorResponses },
        },
      },
      async (request) => svc.get(request.principal, request.params.id),
    )

    app.post(
      '/groups',
      {
        config: { xml: 'group' },
        schema: {
          summary: 'Create a group (site admins)',
          tags: groupTags,
          body: CreateBody,
          response: { 201: GroupSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.create(request.principal, request.body)),
    )

    app.patch(
      '/groups/:id',
      {
        config: { xml: 'group' },
        schema: {
          summary: 'Update a group (site admins)',
          tags: groupTags,
          params: IdParams,
          body: UpdateBody,
          response: { 200: GroupSchema, ...errorResponses },
        },
      },
      async (request) => svc.update(request.principal, request.params.id, request.body),
    )

    deleteById(app, '/groups/:id', { summary: 'Delete a group (site admins)', tags: groupTags }, (p, id) =>
      svc.remove(p, id),
    )

    app.get(
      '/group_users',
      {
        config: { xml: ['group-users', 'group-user'] },
        schema: {
          summary: 'List group memberships',
          tags: memberTags,
          querystring: MemberListQuery,
          response: { 200: Type.Array(GroupUserSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.listMembers(request.principal, request.query)),
    )

    app.post(
      '/group_users',
      {
        config: { xml: 'group-user' },
        schema: {
          summary: 'Add a user to a group (site admins, the group’s administrators)',
          tags: memberTags,
          body: CreateMemberBody,
          response: { 201: GroupUserSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await svc.addMember(request.principal, request.body)),
    )

    app.patch(
      '/group_users/:id',
      {
        config: { xml: 'group-user' },
        schema: {
          summary: 'Make a member an administrator of the group, or not',
          tags: memberTags,
          params: IdParams,
          body: MemberBody,
          response: { 200: GroupUserSchema, ...errorResponses },
        },
      },
      async (request) => svc.updateMember(request.principal, request.params.id, request.body),
    )

    app.delete(
      '/group_users/:id',
      {
        schema: {
          summary: 'Remove a user from a group (site admins, the group’s administrators)',
          tags: memberTags,
          params: IdParams,
          body: Type.Optional(MemberBody),
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        await svc.removeMember(request.principal, request.params.id, request.body ?? {})
        return reply.code(204).send()
      },
    )
  }
}
