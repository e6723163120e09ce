import os from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Test files spend most of their time waiting on servers, child processes (sftp, lftp,
    // Chromium) and sockets, not on the CPU: three at a time on a 2-core machine took the suite on
    // both databases from 24 to 14 minutes, every file passing even with the machine loaded beyond
    // its cores. Vitest's default (one less than the cores) would run one at a time there.
    maxWorkers: Math.max(3, os.availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // A poll waits for what another process or the browser does: on a loaded machine that takes
    // longer than vitest's one second, and a passing poll returns as soon as it passes.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
})
