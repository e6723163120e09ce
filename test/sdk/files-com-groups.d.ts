// Types for the group part of the official `files.com` SDK (CommonJS, untyped) used by the tests.

declare module 'files.com/lib/models/Group.js' {
  type Params = Record<string, unknown>
  export default class Group {
    constructor(attributes?: Params, options?: Params)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly name: string
    readonly notes: string | null
    readonly user_ids: string
    readonly admin_ids: string
    readonly usernames: string
    getName(): string
    getUserIds(): string
    setNotes(value: string): void
    update(params?: Params): Promise<Group>
    delete(params?: Params): Promise<void>
    save(): Promise<boolean>
    static list(params?: Params, options?: Params): Promise<Group[]>
    static find(id: number, params?: Params, options?: Params): Promise<Group>
    static create(params?: Params, options?: Params): Promise<Group>
  }
}

declare module 'files.com/lib/models/GroupUser.js' {
  type Params = Record<string, unknown>
  export default class GroupUser {
    constructor(attributes?: Params, options?: Params)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly group_id: number
    readonly group_name: string
    readonly user_id: number
    readonly usernames: string
    readonly admin: boolean
    update(params?: Params): Promise<GroupUser>
    delete(params?: Params): Promise<void>
    static list(params?: Params, options?: Params): Promise<GroupUser[]>
    static create(params?: Params, options?: Params): Promise<GroupUser>
  }
}

declare module 'files.com/lib/models/Permission.js' {
  type Params = Record<string, unknown>
  export default class Permission {
    constructor(attributes?: Params, options?: Params)
    readonly attributes: Record<string, any>
    readonly id: number
    readonly path: string
    readonly user_id: number | null
    readonly group_id: number | null
    readonly group_name: string | null
    readonly permission: string
    delete(params?: Params): Promise<void>
    static list(params?: Params, options?: Params): Promise<Permission[]>
    static create(params?: Params, options?: Params): Promise<Permission>
  }
}
