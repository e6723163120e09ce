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
    // Two pages: the signed-in interface (index.html, at `/`) and a share link's page for its
    // recipients (share.html, served at `/f/<code>`); they share the API client and the styles.
    rolldownOptions: {
      input: {
        index: fileURLToPath(new URL('index.html', import.meta.url)),
        share: fileURLToPath(new URL('share.html', import.meta.url)),
      },
    },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
})
