// Preloaded into Wharf by the benchmarks with BENCH_PROFILE=alloc (node --require): samples every
// allocation, the collected ones included (node --heap-prof keeps only what is still alive), and
// writes the profile (Chrome DevTools' .heapprofile format) into BENCH_PROFILE_DIR when Wharf is
// stopped. What a delivery or a request allocates is what the young generation's collections cost.
'use strict'
const fs = require('node:fs')
const inspector = require('node:inspector')
const path = require('node:path')

const dir = process.env.BENCH_PROFILE_DIR
if (dir) {
  const session = new inspector.Session()
  session.connect()
  session.post('HeapProfiler.enable')
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMinorGC: true,
    includeObjectsCollectedByMajorGC: true,
  })
  const write = () => {
    // The in-process session answers synchronously, before the server's own handler exits.
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (err) return
      const file = path.join(dir, `Alloc.${process.pid}.${Date.now()}.heapprofile`)
      fs.writeFileSync(file, JSON.stringify(result.profile))
    })
  }
  process.prependOnceListener('SIGTERM', write)
  process.prependOnceListener('SIGINT', write)
}
