// The baseline of the benchmark: bare Fastify, one route, no authentication, no database, serving
// the same JSON body Wharf answers on GET /api_key. Started by bench/run.js in its own process.
import Fastify from 'fastify'

const port = Number(process.env['PORT'])
const body = JSON.parse(process.env['BARE_BODY'] ?? '{}')

const app = Fastify({ logger: false })
app.get('/api/rest/v1/api_key', async () => body)

const stop = async () => {
  await app.close()
  process.exit(0)
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)

await app.listen({ host: '127.0.0.1', port })
process.stdout.write('ready\n')
