/**
 * How a listener checks a request, as the server signs it (src/webhooks/webhook-signature.ts):
 * X-Service-Signature is the md5, in hex, of the verification token followed by the raw body.
 */
const NODE_EXAMPLE = `import crypto from 'node:crypto'
import http from 'node:http'

const TOKEN = process.env.WHARF_VERIFICATION_TOKEN // the verification token above

http.createServer((req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    // The raw body as received: parsing and re-serialising it would change the bytes.
    const body = Buffer.concat(chunks).toString('utf8')
    const expected = Buffer.from(crypto.createHash('md5').update(TOKEN + body).digest('hex'))
    const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''))
    if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
      res.writeHead(401).end('bad signature')
      return
    }
    const event = JSON.parse(body) // { operation, path, sourcepath, username, attempt, … }
    console.log(event.operation, event.path, 'attempt', event.attempt)
    res.writeHead(200).end('ok') // 200 or 204 counts as delivered; anything else is retried
  })
}).listen(8000)
`

export function SignatureExample() {
  return (
    <>
      <h3 class="wh-h3" id="wh-example-title">
        Example listener (Node.js)
      </h3>
      <p>
        Each request carries <code>X-Service-Signature</code>: the MD5 (32 hex characters) of the verification
        token followed by the raw request body, <code>md5(verification_token + body)</code>.
      </p>
      <pre>
        <code>{NODE_EXAMPLE}</code>
      </pre>
      <p>
        It also carries the <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> headers{' '}
        <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> (
        <code>v1,</code> and the base64 HMAC-SHA256 of <code>id.timestamp.body</code>, keyed with the signing
        secret): any Standard Webhooks library checks them with the signing secret. The{' '}
        <code>webhook-id</code> stays the same across retries of one notification, so a listener can drop
        duplicates by it.
      </p>
    </>
  )
}
