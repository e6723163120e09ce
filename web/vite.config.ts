import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The web interface: Preact pages built into dist/web, which the server serves at `/`.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // No HTML is injected from elsewhere and nothing is fetched at run time: every byte is built here.
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
})
