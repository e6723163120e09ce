import http from 'node:http'
import net from 'node:net'

/** One request as it arrived on the wire: header names as sent, the body byte for byte. */
export interface WireRequest {
  method: string
  url: string
  /** [name, value] pairs in the order and letter case the client sent them. */
  headers: [string, string][]
  body: Buffer
}

export interface LoopbackServer {
  host: string
  port: number
  /** `http://host:port` */
  origin: string
  /** Requests read to the end (HTTP servers only). */
  requests: WireRequest[]
  /** TCP connections accepted, whatever happened on them. */
  connections: number
  close(): Promise<void>
}

const open: { close(): Promise<void> }[] = []

/** Closes every server the helpers started; call it in afterEach. */
export async function closeLoopbackServers(): Promise<void> {
  await Promise.all(open.splice(0).map((s) => s.close()))
}

/** An HTTP listener that records each request, then lets `respond` answer it. */
export async function httpServer(
  respond: (req: WireRequest, res: http.ServerResponse) => void,
  host = '127.0.0.1',
  port = 0,
): Promise<LoopbackServer> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const headers: [string, string][] = []
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!])
      const wire = { method: req.method ?? '', url: req.url ?? '', headers, body: Buffer.concat(chunks) }
      state.requests.push(wire)
      respond(wire, res)
    })
  })
  const state = await track(server, host, port)
  return state
}

/** A bare TCP listener for misbehaving peers: `onSocket` decides what happens to each connection. */
export async function tcpServer(
  onSocket: (socket: net.Socket) => void,
  host = '127.0.0.1',
  port = 0,
): Promise<LoopbackServer> {
  const server = net.createServer((socket) => {
    socket.on('error', () => {})
    onSocket(socket)
  })
  return track(server, host, port)
}

/** A port on 127.0.0.1 that was listening a moment ago and is closed now. */
export async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function track(server: net.Server, host: string, port: number): Promise<LoopbackServer> {
  const sockets = new Set<net.Socket>()
  const state: LoopbackServer = {
    host,
    port: 0,
    origin: '',
    requests: [],
    connections: 0,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  server.on('connection', (socket: net.Socket) => {
    state.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  state.port = (server.address() as net.AddressInfo).port
  state.origin = `http://${host}:${state.port}`
  open.push(state)
  return state
}
