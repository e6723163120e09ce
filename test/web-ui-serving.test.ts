import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useServer } from './helpers/server.js'

/** How the server hands out the built web interface (a stand-in build here; no browser needed). */
describe('web interface files', () => {
  let dir: string
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-web-fixture-'))
    await fs.mkdir(path.join(dir, 'assets'))
    await fs.writeFile(
      path.join(dir, 'index.html'),
      '<!doctype html><title>Wharf</title><div id="app"></div>',
    )
    await fs.writeFile(
      path.join(dir, 'share.html'),
      '<!doctype html><title>Shared files</title><div id="share"></div>',
    )
    await fs.writeFile(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("wharf")')
    await fs.writeFile(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })
  const s = useServer('sqlite', () => ({ WEB_DIR: dir }))
  const unbuilt = useServer('sqlite', () => ({ WEB_DIR: path.join(dir, 'missing') }))

  it('serves index.html at / uncached, with a policy that allows nothing from elsewhere', async () => {
    // A browser's Accept header prefers HTML and also names XML: the page is still HTML.
    const r = await fetch(`${s.url}/`, { headers: { accept: 'text/html,application/xml;q=0.9,*/*;q=0.8' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(r.headers.get('cache-control')).toBe('no-cache')
    const csp = r.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    expect(await r.text()).toContain('<div id="app">')
  })

  it('serves the share page at /f/<code> for any code, uncached, with the same policy', async () => {
    for (const code of ['0123456789abcdef0123456789abcdef', 'no-such-link']) {
      const r = await fetch(`${s.url}/f/${code}`)
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(r.headers.get('cache-control')).toBe('no-cache')
      expect(r.headers.get('content-security-policy') ?? '').toContain("connect-src 'self'")
      expect(await r.text()).toContain('<div id="share">')
    }
    // More than one segment names no link: no page.
    expect((await fetch(`${s.url}/f/a/b`)).status).toBe(404)
  })

  it('serves hashed assets for good and other files uncached', async () => {
    const js = await fetch(`${s.url}/assets/index-abc123.js`)
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toMatch(/^(text|application)\/javascript/)
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(await js.text()).toBe('console.log("wharf")')
    const svg = await fetch(`${s.url}/favicon.svg`)
    expect(svg.status).toBe(200)
    expect(svg.headers.get('cache-control')).toBe('no-cache')
  })

  it('answers the API as before, and a missing file with the API 404', async () => {
    const api = await fetch(`${s.url}/api/rest/v1/swagger_doc`)
    expect(api.status).toBe(200)
    const missing = await fetch(`${s.url}/assets/nothing-here.js`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { type: string }).type).toBe('not-found')
    const outside = await fetch(`${s.url}/../../etc/passwd`)
    expect(outside.status).toBe(404)
  })

  it('says how to build the interface when it is not built', async () => {
    const r = await fetch(`${unbuilt.url}/`)
    expect(r.status).toBe(503)
    expect(await r.text()).toContain('npm run build')
    expect((await fetch(`${unbuilt.url}/api/rest/v1/swagger_doc`)).status).toBe(200)
  })
})
