import net from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type Connection,
  type ConnectionLimits,
  SocketConnections,
} from '../src/connections/socket-connections.js'

const LIMITS: ConnectionLimits = {
  maxSessionsPerIp: 2,
  maxSessionsPerUser: 1,
  loginTimeoutMs: 60_000,
  idleTimeoutMs: 60_000,
}

type Said = 'tooManyFromAddress' | 'loginTimedOut' | 'idle'

/** A loopback listener whose sockets go through `SocketConnections`, recording every refusal said. */
async function world(
  limits: Partial<ConnectionLimits> = {},
  busy?: () => boolean,
  /** Runs as each connection is accepted, before any timer can fire. */
  onAccept?: (conn: Connection) => void,
) {
  const connections = new SocketConnections('TEST', { ...LIMITS, ...limits })
  const said: Said[] = []
  const accepted: Connection[] = []
  let seen = 0
  const server = net.createServer((socket) => {
    seen++
    const conn = connections.accept(socket, '127.0.0.1', {
      tooManyFromAddress: () => {
        said.push('tooManyFromAddress')
        socket.destroy()
      },
      loginTimedOut: () => {
        said.push('loginTimedOut')
        socket.destroy()
      },
      idle: () => {
        said.push('idle')
        socket.destroy()
      },
      busy,
    })
    if (!conn) return
    accepted.push(conn)
    onAccept?.(conn)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  const clients: net.Socket[] = []
  const connect = async () => {
    const before = seen
    const socket = net.connect(port, '127.0.0.1')
    socket.on('error', () => undefined)
    clients.push(socket)
    await expect.poll(() => seen).toBe(before + 1)
    return socket
  }
  const closeAll = async () => {
    for (const c of clients) c.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return { connections, said, accepted, connect, closeAll }
}

describe('SocketConnections', () => {
  let closeAll: (() => Promise<void>) | undefined
  afterEach(async () => {
    await closeAll?.()
    closeAll = undefined
  })

  it('refuses a connection past the address cap, and takes one again once another has closed', async () => {
    const w = await world()
    closeAll = w.closeAll
    await w.connect()
    const second = await w.connect()
    await w.connect()
    expect(w.said).toEqual(['tooManyFromAddress'])
    expect(w.connections.size).toBe(2)
    second.destroy()
    await expect.poll(() => w.connections.size).toBe(1)
    await w.connect()
    expect(w.said).toEqual(['tooManyFromAddress'])
    expect(w.connections.size).toBe(2)
  })

  it('refuses a login past the user cap, and takes it again once the first has closed', async () => {
    const w = await world({ maxSessionsPerIp: 5 })
    closeAll = w.closeAll
    await w.connect()
    await w.connect()
    const [first, second] = w.accepted as [Connection, Connection]
    expect(first.login('u1', 'alice')).toBe(true)
    expect(second.login('u1', 'alice')).toBe(false)
    expect(second.loggedIn).toBe(false)
    expect(second.login('u2', 'bob')).toBe(true)
    first.close()
    await w.connect()
    expect(w.accepted[2]?.login('u1', 'alice')).toBe(true)
  })

  it('says the login deadline to a connection that has not logged in, and no more', async () => {
    const w = await world({ loginTimeoutMs: 20, idleTimeoutMs: 20 })
    closeAll = w.closeAll
    await w.connect()
    await expect.poll(() => w.said).toEqual(['loginTimedOut'])
    await expect.poll(() => w.connections.size).toBe(0)
  })

  it('says idle to a logged-in connection without requests, but not while it is busy', async () => {
    let busy = true
    let asked = 0
    const w = await world({ loginTimeoutMs: 60_000, idleTimeoutMs: 20 }, () => {
      asked++
      return busy
    })
    closeAll = w.closeAll
    await w.connect()
    const conn = w.accepted[0] as Connection
    expect(conn.login('u1')).toBe(true)
    // The idle timer came twice and found the connection busy each time.
    await expect.poll(() => asked).toBeGreaterThanOrEqual(2)
    expect(w.said).toEqual([])
    expect(conn.closed).toBe(false)
    busy = false
    await expect.poll(() => w.said).toEqual(['idle'])
    await expect.poll(() => w.connections.size).toBe(0)
  })

  it('stops the login deadline once logged in', async () => {
    const logins: boolean[] = []
    const w = await world({ loginTimeoutMs: 20, idleTimeoutMs: 60_000 }, undefined, (conn) => {
      if (logins.length === 0) logins.push(conn.login('u1'))
    })
    closeAll = w.closeAll
    await w.connect()
    expect(logins).toEqual([true])
    await w.connect()
    // The second connection's deadline passes; the first, logged in, is still open.
    await expect.poll(() => w.said).toEqual(['loginTimedOut'])
    expect(w.accepted[0]?.closed).toBe(false)
  })

  it('clears its timer, releases its counts and runs its clean-ups exactly once, however often closed', async () => {
    let cleaned = 0
    let finish = () => {}
    let loggedIn = false
    let secondLoggedIn = false
    const w = await world(
      { maxSessionsPerIp: 1, loginTimeoutMs: 20, idleTimeoutMs: 20 },
      undefined,
      (conn) => {
        if (cleaned > 0) {
          secondLoggedIn = conn.login('u1')
          return
        }
        loggedIn = conn.login('u1')
        conn.onClose(
          () =>
            new Promise<void>((resolve) => {
              cleaned++
              finish = resolve
            }),
        )
        conn.close()
        conn.close()
      },
    )
    closeAll = w.closeAll
    const socket = await w.connect()
    expect(loggedIn).toBe(true)
    const conn = w.accepted[0] as Connection
    socket.destroy()
    await expect.poll(() => cleaned).toBe(1)
    expect(w.connections.size).toBe(0)
    // `settled` waits for the clean-up still running.
    let settled = false
    void w.connections.settled().then(() => {
      settled = true
    })
    await new Promise((r) => setTimeout(r, 100))
    expect(settled).toBe(false)
    finish()
    await expect.poll(() => settled).toBe(true)
    // Neither the deadline nor the idle timer fired after the close, and neither the address nor
    // the user counts the closed connection any more.
    expect(w.said).toEqual([])
    expect(cleaned).toBe(1)
    const second = await w.connect()
    expect(w.accepted).toHaveLength(2)
    expect(secondLoggedIn).toBe(true)
    second.destroy()
    // A clean-up added after the close runs at once, still only once.
    let late = 0
    conn.onClose(() => late++)
    await expect.poll(() => late).toBe(1)
    // A closed connection logs in no more.
    expect(conn.login('u2')).toBe(false)
  })
})
