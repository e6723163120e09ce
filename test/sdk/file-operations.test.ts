import File from 'files.com/lib/models/File.js'
import FileAction from 'files.com/lib/models/FileAction.js'
import Folder from 'files.com/lib/models/Folder.js'
import { describe, expect, it } from 'vitest'
import { dialects } from '../helpers/server.js'
import { filesSdkServer, findSummed, md5, unique } from './files-sdk.js'
import { describeError, type Recorder, sdkError } from './sdk.js'

describe.each(dialects)('files.com SDK: folders, copy, move and delete (%s)', (dialect) => {
  let rec: Recorder
  filesSdkServer(dialect, (ctx) => {
    rec = ctx.rec
  })

  const names = (list: File[]) => list.map((f) => f.display_name)
  const read = async (p: string) => (await File.find(p).then((f) => f.download())).downloadToString()
  const notFound = async (p: string) => describeError(await sdkError(File.find(p)))
  const FILE_NOT_FOUND = {
    className: 'NotFound_FileNotFoundError',
    type: 'not-found/file-not-found',
    httpCode: 404,
  }

  it('lists a folder across pages with auto-pagination, each entry once', async () => {
    const folder = unique('list')
    const files = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt', 'g.txt']
    for (const f of files) await File.uploadData(`${folder}/${f}`, f)
    await findSummed(`${folder}/a.txt`)
    await Folder.create(`${folder}/sub1`)
    await Folder.create(`${folder}/sub2`)
    rec.requests.length = 0

    const listed = await Folder.listFor(folder, { per_page: 3 })
    expect(listed.every((f) => f instanceof File)).toBe(true)
    expect(names(listed).sort()).toEqual([...files, 'sub1', 'sub2'].sort())
    expect(new Set(listed.map((f) => f.id)).size).toBe(9)
    const a = listed.find((f) => f.display_name === 'a.txt')!
    expect(a.attributes).toMatchObject({ path: `${folder}/a.txt`, type: 'file', size: 5, md5: md5('a.txt') })
    expect(listed.find((f) => f.display_name === 'sub1')!.type).toBe('directory')

    const pages = rec.requests.map((r) => new URL(r.url, 'http://x').searchParams)
    expect(pages).toHaveLength(3)
    expect(pages.map((q) => q.get('per_page'))).toEqual(['3', '3', '3'])
    expect(pages.slice(1).every((q) => (q.get('cursor') ?? '') !== '')).toBe(true)
  })

  it('sorts a listing by path both ways and searches by name', async () => {
    const folder = unique('sort')
    for (const f of ['beta.txt', 'Alpha.txt', 'gamma.log']) await File.uploadData(`${folder}/${f}`, f)
    const asc = await Folder.listFor(folder, { sort_by: { path: 'asc' } })
    expect(names(asc)).toEqual(['Alpha.txt', 'beta.txt', 'gamma.log'])
    const desc = await Folder.listFor(folder, { sort_by: { path: 'desc' }, per_page: 2 })
    expect(names(desc)).toEqual(['gamma.log', 'beta.txt', 'Alpha.txt'])
    const found = await Folder.listFor(folder, { search: 'ALPHA' })
    expect(names(found)).toEqual(['Alpha.txt'])
  })

  it('lists the root folder with "/"', async () => {
    const top = unique('top')
    await Folder.create(top)
    expect(names(await Folder.listFor('/'))).toContain(top)
  })

  it('creates folders, with parents only when mkdir_parents is true', async () => {
    const root = unique('mk')
    const made = await Folder.create(`${root}/a/b`, { mkdir_parents: true })
    expect(made.attributes).toMatchObject({ path: `${root}/a/b`, display_name: 'b', type: 'directory' })
    expect(names(await Folder.listFor(`${root}/a`))).toEqual(['b'])

    expect(describeError(await sdkError(Folder.create(`${unique('orphan')}/child`)))).toEqual({
      className: 'ProcessingFailure_DestinationParentDoesNotExistError',
      type: 'processing-failure/destination-parent-does-not-exist',
      httpCode: 422,
    })
    expect(describeError(await sdkError(Folder.create(`${root}/a/b`)))).toEqual({
      className: 'ProcessingFailure_DestinationExistsError',
      type: 'processing-failure/destination-exists',
      httpCode: 422,
    })
    await File.uploadData(`${root}/file.txt`, 'f')
    expect(
      describeError(await sdkError(Folder.create(`${root}/file.txt/sub`, { mkdir_parents: true }))),
    ).toEqual({
      className: 'ProcessingFailure_DestinationParentConflictError',
      type: 'processing-failure/destination-parent-conflict',
      httpCode: 422,
    })
  })

  it('refuses to list a missing folder or a file', async () => {
    const err = await sdkError(Folder.listFor(unique('ghost')))
    // The SDK has no class of its own for this type: the generic API error carries it.
    expect(describeError(err)).toEqual({
      className: 'FilesApiError',
      type: 'not-found/folder-not-found',
      httpCode: 404,
    })
    const p = `${unique('lf')}/plain.txt`
    await File.uploadData(p, 'plain')
    expect(describeError(await sdkError(Folder.listFor(p)))).toEqual({
      className: 'BadRequest_FolderMustNotBeAFileError',
      type: 'bad-request/folder-must-not-be-a-file',
      httpCode: 400,
    })
  })

  it('copies a file, refuses to overwrite unless asked, and copies folders with their contents', async () => {
    const root = unique('copy')
    await File.uploadData(`${root}/src.txt`, 'source bytes')
    // Known by now: the copy takes them with it.
    const src = await findSummed(`${root}/src.txt`)
    const action = await src.copy({ destination: `${root}/dst.txt` })
    expect(action).toBeInstanceOf(FileAction)
    expect(action.status).toBe('completed')
    const dst = await File.find(`${root}/dst.txt`)
    expect(dst.id).not.toBe(src.id)
    expect(dst.md5).toBe(src.md5)
    expect(await read(`${root}/dst.txt`)).toBe('source bytes')
    expect(await read(`${root}/src.txt`)).toBe('source bytes')

    await File.uploadData(`${root}/other.txt`, 'other bytes')
    expect(describeError(await sdkError(src.copy({ destination: `${root}/other.txt` })))).toEqual({
      className: 'ProcessingFailure_DestinationExistsError',
      type: 'processing-failure/destination-exists',
      httpCode: 422,
    })
    expect(await read(`${root}/other.txt`)).toBe('other bytes')
    await src.copy({ destination: `${root}/other.txt`, overwrite: true })
    expect(await read(`${root}/other.txt`)).toBe('source bytes')

    await File.uploadData(`${root}/tree/deep/leaf.txt`, 'leaf')
    await (await File.find(`${root}/tree`)).copy({ destination: `${root}/tree-copy` })
    expect(await read(`${root}/tree-copy/deep/leaf.txt`)).toBe('leaf')
    expect(await read(`${root}/tree/deep/leaf.txt`)).toBe('leaf')
  })

  it('renames a file, moves it into another folder, and moves folders with their contents', async () => {
    const root = unique('move')
    await File.uploadData(`${root}/a/old.txt`, 'moving bytes')
    const up = await findSummed(`${root}/a/old.txt`)
    await Folder.create(`${root}/b`)
    const action = await (await File.find(`${root}/a/old.txt`)).move({ destination: `${root}/a/new.txt` })
    expect(action.status).toBe('completed')
    expect(await notFound(`${root}/a/old.txt`)).toEqual(FILE_NOT_FOUND)
    const renamed = await File.find(`${root}/a/new.txt`)
    expect(renamed.attributes).toMatchObject({ display_name: 'new.txt', size: up.size, md5: up.md5 })

    await renamed.move({ destination: `${root}/b/new.txt` })
    expect(await notFound(`${root}/a/new.txt`)).toEqual(FILE_NOT_FOUND)
    expect(await read(`${root}/b/new.txt`)).toBe('moving bytes')
    expect(names(await Folder.listFor(`${root}/a`))).toEqual([])

    await File.uploadData(`${root}/b/sub/inner.txt`, 'inner')
    await (await File.find(`${root}/b`)).move({ destination: `${root}/c` })
    expect(await read(`${root}/c/sub/inner.txt`)).toBe('inner')
    expect(await read(`${root}/c/new.txt`)).toBe('moving bytes')
    expect(await notFound(`${root}/b`)).toEqual(FILE_NOT_FOUND)

    await File.uploadData(`${root}/x.txt`, 'x')
    await File.uploadData(`${root}/y.txt`, 'y')
    const x = await File.find(`${root}/x.txt`)
    expect(describeError(await sdkError(x.move({ destination: `${root}/y.txt` })))).toEqual({
      className: 'ProcessingFailure_DestinationExistsError',
      type: 'processing-failure/destination-exists',
      httpCode: 422,
    })
    await x.move({ destination: `${root}/y.txt`, overwrite: true })
    expect(await read(`${root}/y.txt`)).toBe('x')
    expect(await notFound(`${root}/x.txt`)).toEqual(FILE_NOT_FOUND)
  })

  it('deletes a file, refuses a non-empty folder without recursive, and deletes it with recursive', async () => {
    const root = unique('del')
    await File.uploadData(`${root}/keep/one.txt`, '1')
    await File.uploadData(`${root}/keep/deeper/two.txt`, '2')
    await File.uploadData(`${root}/gone.txt`, 'g')
    await (await File.find(`${root}/gone.txt`)).delete()
    expect(await notFound(`${root}/gone.txt`)).toEqual(FILE_NOT_FOUND)
    expect(describeError(await sdkError(new File({ path: `${root}/gone.txt` }).delete()))).toEqual(
      FILE_NOT_FOUND,
    )

    const folder = await File.find(`${root}/keep`)
    expect(describeError(await sdkError(folder.delete()))).toEqual({
      className: 'ProcessingFailure_FolderNotEmptyError',
      type: 'processing-failure/folder-not-empty',
      httpCode: 422,
    })
    expect(await read(`${root}/keep/one.txt`)).toBe('1')
    await folder.delete({ recursive: true })
    expect(await notFound(`${root}/keep`)).toEqual(FILE_NOT_FOUND)
    expect(await notFound(`${root}/keep/deeper/two.txt`)).toEqual(FILE_NOT_FOUND)

    await Folder.create(`${root}/empty`)
    await (await File.find(`${root}/empty`)).delete()
    expect(names(await Folder.listFor(root))).toEqual([])
  })
})
