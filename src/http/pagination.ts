import type { FastifyReply } from 'fastify'
import type { Page } from '../api/list-spec.js'

/**
 * What a list page looks like over HTTP: its records are the body, its cursors go in headers.
 * The list query itself is parsed in api/list-query.ts, its cursors signed in db/list-cursor.ts
 * and its SQL built in db/list-sql.ts.
 */

/** The cursor headers, with the Files.com names the SDKs read. */
export function setCursorHeaders(reply: FastifyReply, page: Page<unknown>): void {
  if (page.next) {
    reply.header('X-Service-Cursor-Next', page.next)
    reply.header('X-Files-Cursor-Next', page.next)
    reply.header('X-Files-Cursor', page.next)
  }
  if (page.prev) {
    reply.header('X-Service-Cursor-Prev', page.prev)
    reply.header('X-Files-Cursor-Prev', page.prev)
  }
}

/** Sets the cursor headers and gives the page's records: the body of every list route. */
export function sendPage<T>(reply: FastifyReply, page: Page<T>): T[] {
  setCursorHeaders(reply, page)
  return page.items
}
