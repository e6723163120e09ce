import { defineConfig } from 'vitest/config'

// `npm run screenshots`: every page of the web interface, saved to docs/screenshots.
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['web/screenshots/all.shots.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
})
