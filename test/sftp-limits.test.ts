import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import ssh2 from 'ssh2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, dialects, grant, makeUser, type TestUser } from './helpers/server.js'
import {
  freePort,
  type ProcessSite,
  processSite,
  type ServerProcess,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'
import { run, sftpBatch, sshOptions, useSftpServer } from './helpers/sftp.js'

/** An ssh2 client logged in with a password, for what OpenSSH's sftp cannot be made to send. */
async function connect(port: number, username: string, password: string, sock?: net.Socket) {
  const client = new ssh2.Client()
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.once('close', () => reject(new Error('connection closed before login')))
    client.connect({
      host: '127.0.0.1',
      port,
      username,
      password,
      readyTimeout: 10_000,
      ...(sock ? { sock } : {}),
    })
  })
  const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) =>
    client.sftp((err, s) => (err ? reject(err) : resolve(s))),
  )
  return { client, sftp }
}

/** The SFTP status code and message an operation failed with. */
function failure(start: (cb: (err: (Error & { code?: number }) | null | undefined) => void) => void) {
  return new Promise<{ code: number | undefined; message: string }>((resolve, reject) =>
    start((err) =>
      err ? resolve({ code: err.code, message: err.message }) : reject(new Error('it succeeded')),
    ),
  )
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const str = (v: string) => Buffer.concat([u32(Buffer.byteLength(v)), Buffer.from(v)])
/** One SFTP packet: length, type, body. */
const packet = (type: number, body: Buffer) =>
  Buffer.concat([u32(body.length + 1), Buffer.from([type]), body])

/** The `sftp` subsystem as a raw channel: packets in, whole packets out. */
async function rawSftp(client: ssh2.Client) {
  const channel = await new Promise<ssh2.ClientChannel>((resolve, reject) =>
    client.subsys('sftp', (err, ch) => (err ? reject(err) : resolve(ch))),
  )
  let buffered = Buffer.alloc(0)
  let waiting: (() => void) | null = null
  channel.on('data', (d: Buffer) => {
    buffered = Buffer.concat([buffered, d])
    waiting?.()
  })
  const closed = new Promise<void>((resolve) => channel.once('close', () => resolve()))
  return {
    channel,
    closed,
    /** Sends a packet and returns the next whole packet received. */
    async request(p: Buffer): Promise<Buffer> {
      channel.write(p)
      while (buffered.length < 4 || buffered.length < 4 + buffered.readUInt32BE(0)) {
        await new Promise<void>((resolve) => {
          waiting = resolve
        })
      }
      const size = 4 + buffered.readUInt32BE(0)
      const reply = buffered.subarray(0, size)
      buffered = buffered.subarray(size)
      return reply
    },
  }
}

describe.each(dialects)('SFTP limits and refusals (%s)', (dialect) => {
  const s = useSftpServer(dialect, {
    LOGIN_MAX_FAILURES: '3',
    SFTP_MAX_SESSIONS_PER_USER: '2',
    SFTP_LOGIN_TIMEOUT_MS: '3000',
    SFTP_IDLE_TIMEOUT_MS: '3000',
  })
  let alice: TestUser

  beforeAll(async () => {
    alice = await makeUser(s, { username: 'alice' })
    expect((await call(s, 'POST', '/folders/inbox', { key: s.adminKey, body: {} })).status).toBe(201)
    await grant(s, alice.id, 'inbox', 'full')
  })

  it('shows host keys whose fingerprints are those ssh-keyscan sees', async () => {
    const scan = await run('ssh-keyscan', ['-T', '10', '-p', String(s.sftp.port), '127.0.0.1'])
    expect(scan.code).toBe(0)
    const lines = await run('ssh-keygen', ['-l', '-f', '-'], { input: scan.stdout })
    const seen = lines.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[1]!.replace(/^SHA256:/, ''))
      .sort()
    const api = await call(s, 'GET', '/sftp_host_keys', { key: s.adminKey })
    expect(seen).toEqual(api.body.map((k: { fingerprint_sha256: string }) => k.fingerprint_sha256).sort())
    expect(seen).toHaveLength(2)
  })

  it('refuses a shell and commands: only the sftp subsystem is served', async () => {
    const ssh = (extra: string[]) =>
      run(
        'sshpass',
        [
          '-e',
          'ssh',
          ...sshOptions(s.sftp.port).map((o) => (o === '-P' ? '-p' : o)),
          '-o',
          'PubkeyAuthentication=no',
          ...extra,
        ],
        { env: { SSHPASS: alice.password }, timeoutMs: 20_000 },
      )
    const exec = await ssh(['alice@127.0.0.1', 'ls'])
    expect(exec.code).not.toBe(0)
    expect(exec.stdout).toBe('')
    const subsystem = await ssh(['-s', 'alice@127.0.0.1', 'netconf'])
    expect(subsystem.code).not.toBe(0)
    const forward = await ssh([
      '-N',
      '-o',
      'ExitOnForwardFailure=yes',
      '-L',
      '0:127.0.0.1:22',
      'alice@127.0.0.1',
    ])
    expect(forward.code).not.toBe(0)
  })

  it('answers bad paths with the protocol’s error and keeps serving', async () => {
    const { client, sftp } = await connect(s.sftp.port, 'alice', alice.password)
    try {
      const dotdot = await failure((cb) => sftp.stat('/inbox/../etc', cb))
      expect(dotdot).toEqual({ code: 4, message: 'path must not contain empty, "." or ".." segments' })
      const control = await failure((cb) => sftp.mkdir('/inbox/a\u0001b', cb))
      expect(control).toEqual({ code: 4, message: 'path must not contain control characters' })
      const long = await failure((cb) => sftp.stat(`/inbox/${'x'.repeat(6000)}`, cb))
      expect(long.code).toBe(4)
      expect(long.message).toMatch(/longer than 5000/)
      const missing = await failure((cb) => sftp.stat('/inbox/none', cb))
      expect(missing.code).toBe(2)
      const denied = await failure((cb) => sftp.open('/elsewhere.txt', 'w', cb))
      expect(denied.code).toBe(3)
      // Files are written front to back: going back (a rewrite, a resume) is refused, and the
      // file is not stored.
      const handle = await new Promise<Buffer>((resolve, reject) =>
        sftp.open('/inbox/seek.bin', 'w', (err, h) => (err ? reject(err) : resolve(h))),
      )
      await new Promise<void>((resolve, reject) =>
        sftp.write(handle, Buffer.from('abc'), 0, 3, 0, (err) => (err ? reject(err) : resolve())),
      )
      const backwards = await failure((cb) => sftp.write(handle, Buffer.from('xyz'), 0, 3, 0, cb))
      expect(backwards.code).toBe(4)
      expect(backwards.message).toMatch(/front to back/)
      expect((await failure((cb) => sftp.close(handle, cb))).code).toBe(4)
      const still = await new Promise<string[]>((resolve, reject) =>
        sftp.readdir('/inbox', (err, list) => (err ? reject(err) : resolve(list.map((e) => e.filename)))),
      )
      expect(still).toEqual([])
    } finally {
      client.end()
    }
  })

  it('answers requests it does not know with OP_UNSUPPORTED, and a packet it cannot read by hanging up', async () => {
    const { client } = await connect(s.sftp.port, 'alice', alice.password)
    try {
      const raw = await rawSftp(client)
      expect((await raw.request(packet(1, u32(3))))[4]).toBe(2) // VERSION
      // An extension Wharf does not offer, a link (Wharf has none), and the reverse of both.
      for (const [type, body] of [
        [200, Buffer.concat([u32(7), str('frob@example.com'), str('/inbox')])],
        [20, Buffer.concat([u32(7), str('/inbox/link'), str('/inbox')])],
        [19, Buffer.concat([u32(7), str('/inbox/link')])],
      ] as const) {
        const reply = await raw.request(packet(type, body))
        expect({ type: reply[4], id: reply.readUInt32BE(5), code: reply.readUInt32BE(9) }).toEqual({
          type: 101,
          id: 7,
          code: 8,
        })
      }
      // A packet type SFTP does not have carries no request id to answer: the connection ends.
      raw.channel.write(packet(99, u32(8)))
      await raw.closed
    } finally {
      client.end()
    }
    // The server goes on.
    const again = await connect(s.sftp.port, 'alice', alice.password)
    try {
      const names = await new Promise<string[]>((resolve, reject) =>
        again.sftp.readdir('/inbox', (err, list) =>
          err ? reject(err) : resolve(list.map((e) => e.filename)),
        ),
      )
      expect(Array.isArray(names)).toBe(true)
    } finally {
      again.client.end()
    }
  })

  it('drops a file whose connection goes away before it is closed', async () => {
    const { client, sftp } = await connect(s.sftp.port, 'alice', alice.password)
    await new Promise<void>((resolve, reject) =>
      sftp.open('/inbox/half.bin', 'w', (err, handle) => {
        if (err) return reject(err)
        sftp.write(handle, Buffer.alloc(64 * 1024, 7), 0, 64 * 1024, 0, (e) => (e ? reject(e) : resolve()))
      }),
    )
    client.destroy()
    await expect
      .poll(async () => (await call(s, 'GET', '/folders/inbox', { key: s.adminKey })).body.length, {
        timeout: 5000,
      })
      .toBe(0)
    expect((await call(s, 'GET', '/files/inbox/half.bin', { key: s.adminKey })).status).toBe(404)
  })

  it('caps channels per connection at 10, and takes another once one closes', async () => {
    const { client, sftp } = await connect(s.sftp.port, 'alice', alice.password)
    const channel = () =>
      new Promise<ssh2.SFTPWrapper>((resolve, reject) =>
        client.sftp((err, c) => (err ? reject(err) : resolve(c))),
      )
    try {
      for (let i = 1; i < 10; i++) await channel()
      await expect(channel()).rejects.toThrow(/open failure/i)
      const closed = new Promise((resolve) => sftp.once('close', resolve))
      sftp.end()
      await closed
      const again = await channel()
      const names = await new Promise<string[]>((resolve, reject) =>
        again.readdir('/inbox', (err, list) => (err ? reject(err) : resolve(list.map((e) => e.filename)))),
      )
      expect(Array.isArray(names)).toBe(true)
    } finally {
      client.end()
    }
  })

  it('caps sessions per user', async () => {
    const one = await connect(s.sftp.port, 'alice', alice.password)
    const two = await connect(s.sftp.port, 'alice', alice.password)
    try {
      await expect(connect(s.sftp.port, 'alice', alice.password)).rejects.toThrow()
    } finally {
      one.client.end()
      two.client.end()
    }
  })

  describe('with two connections per address', () => {
    const capped = useSftpServer(dialect, { SFTP_MAX_SESSIONS_PER_IP: '2' })

    it('caps connections per address, counting from the TCP connection', async () => {
      /** A raw TCP client: what the server sent, and whether it closed the connection. */
      const open = () => {
        const socket = net.connect(capped.sftp.port, '127.0.0.1')
        const seen = { banner: '', closed: false, socket }
        socket.on('data', (d) => {
          seen.banner += d.toString('latin1')
        })
        socket.on('close', () => {
          seen.closed = true
        })
        socket.on('error', () => undefined)
        return seen
      }
      const first = open()
      const second = open()
      await expect.poll(() => first.banner, { timeout: 5000 }).toMatch(/^SSH-2\.0-Wharf/)
      await expect.poll(() => second.banner, { timeout: 5000 }).toMatch(/^SSH-2\.0-Wharf/)
      const third = open()
      await expect.poll(() => third.closed, { timeout: 5000 }).toBe(true)
      expect(third.banner).toBe('')
      // A freed place is taken again.
      first.socket.destroy()
      await expect.poll(() => first.closed).toBe(true)
      await expect
        .poll(
          async () => {
            const next = open()
            const ok = await expect
              .poll(() => next.banner || (next.closed ? 'closed' : ''), { timeout: 5000 })
              .not.toBe('')
              .then(() => next.banner.startsWith('SSH-2.0-Wharf'))
            next.socket.destroy()
            return ok
          },
          { timeout: 10_000 },
        )
        .toBe(true)
      second.socket.destroy()
    })
  })

  it('locks a user out after failed passwords, as POST /sessions does, and records them', async () => {
    const bob = await makeUser(s, { username: 'bob' })
    for (let i = 0; i < 3; i++) {
      const r = await sftpBatch(s.sftp.port, 'bob', 'wrong-password', ['ls'])
      expect(r.code).not.toBe(0)
    }
    const locked = await sftpBatch(s.sftp.port, 'bob', bob.password, ['ls'])
    expect(locked.code).not.toBe(0)
    expect(locked.stderr).toMatch(/Permission denied/)
    const rest = await call(s, 'POST', '/sessions', { body: { username: 'bob', password: bob.password } })
    expect(rest.status).toBe(401)
    expect(rest.body.type).toBe('not-authenticated/locked-out')
    const history = await call(s, 'GET', '/history/login', { key: s.adminKey })
    const failed = history.body.filter(
      (a: { action: string; username: string }) => a.action === 'failedlogin' && a.username === 'bob',
    )
    expect(
      failed.map((a: { interface: string; failure_type: string }) => [a.interface, a.failure_type]),
    ).toEqual(
      expect.arrayContaining([
        ['sftp', 'password_mismatch'],
        ['sftp', 'locked_out'],
      ]),
    )
  })

  it('closes a connection that does not log in in time, and one left idle', async () => {
    const socket = net.connect(s.sftp.port, '127.0.0.1')
    let banner = ''
    let closed = false
    socket.on('data', (d) => {
      banner += d.toString('latin1')
    })
    socket.on('close', () => {
      closed = true
    })
    socket.on('error', () => undefined)
    await expect.poll(() => banner, { timeout: 5000 }).toMatch(/^SSH-2\.0-Wharf/)
    await expect.poll(() => closed, { timeout: 10_000 }).toBe(true)

    const { client } = await connect(s.sftp.port, 'alice', alice.password)
    let idleClosed = false
    client.on('close', () => {
      idleClosed = true
    })
    client.on('error', () => undefined)
    await expect.poll(() => idleClosed, { timeout: 10_000 }).toBe(true)
  })
})

describe.each(dialects)('SFTP login re-check (%s)', (dialect) => {
  let clock = 0
  // The server's clock starts at the real time, when the server does.
  beforeAll(() => {
    clock = Date.now()
  })
  const s = useSftpServer(dialect, {}, { now: () => clock })

  it('ends a connection once its user is disabled, when it reads the login again', async () => {
    const user = await makeUser(s)
    const { client, sftp } = await connect(s.sftp.port, user.username, user.password)
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()))
    await s.container.db.updateTable('users').set({ disabled: 1 }).where('id', '=', user.id).execute()
    // Read again every 30 s, not on every request.
    await new Promise<void>((resolve, reject) => sftp.stat('/', (err) => (err ? reject(err) : resolve())))
    clock += 31_000
    // The connection is closed before the request is answered.
    expect(await failure((cb) => sftp.stat('/', cb))).toEqual({
      code: undefined,
      message: 'No response from server',
    })
    await closed
  })
})

describe.each(dialects)('SFTP memory bounds, measured from outside the server (%s)', (dialect) => {
  const MiB = 1024 * 1024
  const CHUNK = 16 * 1024
  let servers: ServerProcesses
  let site: ProcessSite
  let served: ServerProcess
  let port: number
  const big = crypto.randomBytes(48 * MiB)

  beforeAll(async () => {
    servers = serverProcesses()
    site = await processSite(servers, dialect, {
      SFTP_HOST: '127.0.0.1',
      // Freed buffers of 8 KiB and more go back to the system at once, so that the RSS follows
      // what the server holds rather than what glibc keeps for later.
      MALLOC_MMAP_THRESHOLD_: '8192',
      SFTP_MAX_BUFFERED_BYTES_PER_CONNECTION: String(8 * MiB),
      SFTP_MAX_BUFFERED_BYTES_PER_USER: String(12 * MiB),
    })
    port = await freePort()
    served = await servers.serve(site.env({ SFTP_PORT: String(port) }))
    // A file to read, written as OpenSSH's sftp writes: 64 writes under way at a time.
    const { client, sftp } = await login()
    try {
      const h = await open(sftp, '/big.bin', 'w')
      for (let at = 0; at < big.length; at += 64 * CHUNK) {
        await Promise.all(
          Array.from(
            { length: 64 },
            (_, i) =>
              new Promise<void>((resolve, reject) =>
                sftp.write(h, big, at + i * CHUNK, CHUNK, at + i * CHUNK, (err) =>
                  err ? reject(err) : resolve(),
                ),
              ),
          ),
        )
      }
      await new Promise<void>((resolve, reject) => sftp.close(h, (err) => (err ? reject(err) : resolve())))
    } finally {
      client.end()
    }
  }, 60_000)
  afterAll(async () => {
    await servers?.killAll()
    await site?.remove()
  })

  /** The server's resident memory, in bytes, as `/proc` tells it. */
  const rss = async () => {
    const status = await fs.readFile(`/proc/${served.pid}/status`, 'utf8')
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
  }
  /** The RSS once it has stopped moving (the server has done what it was sent). */
  const settledRss = async () => {
    let last = await rss()
    for (let i = 0; i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      const now = await rss()
      if (Math.abs(now - last) < MiB / 2) return now
      last = now
    }
    return last
  }
  const login = (sock?: net.Socket) =>
    servers.step('ssh2 login', connect(port, 'admin', 'admin-password-1', sock))
  const open = (sftp: ssh2.SFTPWrapper, path: string, mode: 'r' | 'w') =>
    new Promise<Buffer>((resolve, reject) =>
      sftp.open(path, mode, (err, h) => (err ? reject(err) : resolve(h))),
    )
  /** The size of the reads OpenSSH's sftp sends. */
  const READ = 31_952
  /** A client with /big.bin open for reading that has stopped taking data from the network. */
  const stalledReader = async () => {
    const sock = new net.Socket()
    await new Promise<void>((resolve, reject) =>
      sock.connect(port, '127.0.0.1', resolve).once('error', reject),
    )
    const { client, sftp } = await login(sock)
    const h = await open(sftp, '/big.bin', 'r')
    sock.pause()
    return { sock, client, sftp, h }
  }
  /** Every write of `count` chunks to `handle` after a gap at byte 0: how each was answered. */
  const writeAhead = (sftp: ssh2.SFTPWrapper, handle: Buffer, count: number) => {
    const chunk = Buffer.alloc(CHUNK, 7)
    return Promise.all(
      Array.from(
        { length: count },
        (_, i) =>
          new Promise<string>((resolve) =>
            sftp.write(handle, chunk, 0, CHUNK, (i + 1) * CHUNK, (err) =>
              resolve(err ? `${(err as { code?: number }).code} ${err.message}` : 'ok'),
            ),
          ),
      ),
    )
  }
  const tally = (answers: string[]) => {
    const out: Record<string, number> = {}
    for (const a of answers) out[a] = (out[a] ?? 0) + 1
    return out
  }

  it('holds writes ahead of their gaps within the bounds per connection and per user, answering FAILURE past them', async () => {
    const before = await settledRss()
    const a = await login()
    const b = await login()
    try {
      // 7 MiB ahead of the gap in one file: within 8 MiB a connection may hold.
      const first = await open(a.sftp, '/ahead-1.bin', 'w')
      expect(tally(await writeAhead(a.sftp, first, (7 * MiB) / CHUNK))).toEqual({ ok: 448 })
      // Nineteen more files on the same connection, 7 MiB each: 1 MiB each fits, the rest is refused.
      const tooMuch =
        '4 Too much data waiting to be written on this connection or by this user: wait for the replies to earlier writes before sending more'
      for (let f = 2; f <= 20; f++) {
        const h = await open(a.sftp, `/ahead-${f}.bin`, 'w')
        const answers = await writeAhead(a.sftp, h, (7 * MiB) / CHUNK)
        expect(answers.slice(0, 64)).toEqual(Array(64).fill('ok'))
        expect(answers[64]).toBe(tooMuch)
        // The refused file is dropped, and what it held let go.
        for (const later of answers.slice(65)) {
          expect([tooMuch, '4 An earlier write to this file failed']).toContain(later)
        }
      }
      // Another connection of the same user: 12 MiB for the user, 7 held by the first.
      const other = await open(b.sftp, '/ahead-other.bin', 'w')
      const answers = await writeAhead(b.sftp, other, (7 * MiB) / CHUNK)
      expect(tally(answers.slice(0, 320))).toEqual({ ok: 320 })
      expect(answers[320]).toBe(tooMuch)
      // 140 MiB were sent ahead of gaps (held, they grew the RSS by 184–200 MiB); 12 MiB at most
      // are held now. The slack is the garbage of the refused writes not yet collected: V8 lets
      // tens of MiB of buffers go unreclaimed before it collects (25–34 MiB in all were seen).
      // Fewer files left too little garbage for V8 to collect on Node 24 (58 MiB grown).
      expect((await settledRss()) - before).toBeLessThan(12 * MiB + 88 * MiB)
    } finally {
      a.client.end()
      b.client.end()
    }
  }, 60_000)

  it('stops reading a file while the client does not take the data it asked for, and goes on once it does', async () => {
    const before = await settledRss()
    const { sock, client, sftp, h } = await stalledReader()
    try {
      // The client has stopped reading from the network; it asks for 1,000 reads (30 MiB).
      const reads = Array.from(
        { length: 1000 },
        (_, i) =>
          new Promise<Buffer>((resolve, reject) => {
            const buf = Buffer.alloc(READ)
            sftp.read(h, buf, 0, READ, i * READ, (err, n) =>
              err ? reject(err) : resolve(buf.subarray(0, n)),
            )
          }),
      )
      // What the server holds for it: the SSH window (2 MiB), replies waiting for it (1 MiB), the
      // reads under way (2 MiB), what the socket takes (1 MiB); answered at once, the reads grew
      // the RSS by nearly 40 MiB.
      expect((await settledRss()) - before).toBeLessThan(6 * MiB + 20 * MiB)
      sock.resume()
      const got = await servers.step('the reads', Promise.all(reads))
      got.forEach((data, i) => {
        expect(data.equals(big.subarray(i * READ, (i + 1) * READ))).toBe(true)
      })
    } finally {
      client.end()
    }
  }, 60_000)

  it('answers FAILURE to reads past 1024 waiting for a client that takes no data', async () => {
    const { sock, client, sftp, h } = await stalledReader()
    try {
      const reads = Array.from(
        { length: 1400 },
        (_, i) =>
          new Promise<string>((resolve) => {
            const buf = Buffer.alloc(READ)
            sftp.read(h, buf, 0, READ, i * READ, (err, n) =>
              resolve(
                err
                  ? `${(err as { code?: number }).code} ${err.message}`
                  : buf.subarray(0, n).equals(big.subarray(i * READ, (i + 1) * READ))
                    ? 'ok'
                    : 'wrong data',
              ),
            )
          }),
      )
      // Some reads go ahead (about the window's worth); 1024 wait; the rest are refused. The
      // server has taken every request once its memory stops moving.
      await settledRss()
      sock.resume()
      const answers = tally(await servers.step('the reads', Promise.all(reads)))
      const refused = '4 Too many reads waiting: take the data already asked for before asking for more'
      expect(Object.keys(answers).sort()).toEqual([refused, 'ok'])
      expect(answers['ok']).toBeGreaterThan(1024)
    } finally {
      client.end()
    }
  }, 60_000)

  it('answers a READ longer than 255 KiB with a short read, as OpenSSH does', async () => {
    const { client } = await login()
    try {
      const raw = await rawSftp(client)
      expect((await raw.request(packet(1, u32(3))))[4]).toBe(2)
      const opened = await raw.request(packet(3, Buffer.concat([u32(1), str('/big.bin'), u32(1), u32(0)])))
      expect(opened[4]).toBe(102) // HANDLE
      const handle = opened.subarray(13, 13 + opened.readUInt32BE(9))
      const offset = Buffer.alloc(8)
      const reply = await raw.request(
        packet(5, Buffer.concat([u32(2), u32(handle.length), handle, offset, u32(128 * MiB)])),
      )
      expect(reply[4]).toBe(103) // DATA
      const length = reply.readUInt32BE(9)
      expect(length).toBe(255 * 1024)
      expect(reply.subarray(13, 13 + length).equals(big.subarray(0, length))).toBe(true)
    } finally {
      client.end()
    }
  })
})
