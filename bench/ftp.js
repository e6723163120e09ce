// `npm run bench:ftp`: upload and download of one large file with `curl` over plain FTP (passive
// mode), against Wharf's FTP front end and, in the same run, against Debian's vsftpd on a loopback
// port the benchmark starts with a configuration of its own; and Wharf's peak resident memory.
//
// Settings (environment): BENCH_FTP_MB (1024), BENCH_DATABASE_URL (also runs against
// PostgreSQL), BENCH_PROFILE=1 (CPU profile of Wharf), BENCH_VSFTPD (/usr/sbin/vsftpd). Needs
// curl and vsftpd (Debian: curl, vsftpd). See docs/performance.md.
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {
  abort,
  checkMd5,
  cleanups,
  cpuSeconds,
  createPgDatabase,
  dropPgDatabase,
  endedChildrenCpu,
  fmt,
  freePort,
  intSetting,
  json,
  makeRandomFile,
  memory,
  profilesUsed,
  root,
  runCleanups,
  runProgram,
  startProgram,
  startWharf,
  stopChild,
  table,
  waitForGreeting,
} from './harness.js'

const MB = intSetting('BENCH_FTP_MB', 1024, 1, 65536)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const VSFTPD = process.env['BENCH_VSFTPD'] || '/usr/sbin/vsftpd'
const TARGET_RATIO = 0.5
const TARGET_RSS_MB = 200

/**
 * vsftpd on a free port of 127.0.0.1 with a configuration of its own in a temporary folder. It
 * runs as the user running the benchmark (`run_as_launching_user`, which needs no root and no
 * system account), serving anonymous logins that may write into a folder of the run: the only
 * kind of login vsftpd offers without privileges. Passive mode only, as Wharf.
 */
async function startVsftpd(work) {
  const dir = path.join(work, 'vsftpd')
  const files = path.join(dir, 'files')
  const empty = path.join(dir, 'empty')
  await fs.mkdir(files, { recursive: true })
  await fs.mkdir(empty)
  const port = await freePort()
  const pasv = await freePort()
  const config = path.join(dir, 'vsftpd.conf')
  await fs.writeFile(
    config,
    [
      'listen=YES',
      'listen_ipv6=NO',
      'listen_address=127.0.0.1',
      `listen_port=${port}`,
      'background=NO',
      'run_as_launching_user=YES',
      'anonymous_enable=YES',
      'local_enable=NO',
      'no_anon_password=YES',
      `anon_root=${files}`,
      'write_enable=YES',
      'anon_upload_enable=YES',
      'anon_other_write_enable=YES',
      'anon_world_readable_only=NO',
      'anon_umask=022',
      'pasv_enable=YES',
      // A single passive port: each transfer is the only one at a time.
      `pasv_min_port=${pasv}`,
      `pasv_max_port=${pasv}`,
      'port_enable=NO',
      'connect_from_port_20=NO',
      'seccomp_sandbox=NO',
      'xferlog_enable=NO',
      'dirmessage_enable=NO',
      'check_shell=NO',
      `secure_chroot_dir=${empty}`,
      `vsftpd_log_file=${path.join(dir, 'vsftpd.log')}`,
      '',
    ].join('\n'),
  )
  const proc = startProgram('vsftpd', VSFTPD, [config], process.env)
  await waitForGreeting(port, proc, '220', 'FTP')
  return { proc, port, files }
}

/** One curl transfer, timed from the start of the process to its end (the login included, a few ms). */
async function curl(args) {
  const t = process.hrtime.bigint()
  await runProgram('curl', ['-sS', '--ftp-pasv', ...args], { timeoutMs: (60 + MB) * 1000 })
  return Number(process.hrtime.bigint() - t) / 1e6
}

/** Upload then download of the source through one FTP server; every copy is checked. */
async function roundTrip(server, src, work) {
  const dst = path.join(work, `download-${crypto.randomBytes(4).toString('hex')}.bin`)
  const url = `ftp://127.0.0.1:${server.port}/large.bin`
  const cpu0 = await server.cpu()
  const up = await curl(['-u', server.login, '-T', src.file, url])
  const cpu1 = await server.cpu()
  await server.checkUpload()
  const cpu2 = await server.cpu()
  const down = await curl(['-u', server.login, '-o', dst, url])
  const cpu3 = await server.cpu()
  // Checked after the clock stops, as in bench/transfer.js.
  await checkMd5(dst, src, `${server.label}: downloaded copy`)
  await fs.rm(dst)
  await server.removeUpload()
  const cpu = (a, b) => (a === null || b === null ? Number.NaN : b - a)
  return { up, down, upCpu: cpu(cpu0, cpu1), downCpu: cpu(cpu2, cpu3) }
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:ftp does)')
  })
  await fs.access(VSFTPD).catch(() => {
    throw new Error(`${VSFTPD} is missing: install vsftpd (Debian: vsftpd)`)
  })
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-ftp-'))
  cleanups.push(() => fs.rm(work, { recursive: true, force: true }))
  const [load1, load5] = os.loadavg()
  console.log(`Wharf FTP benchmark: ${MB} MiB file, curl against Wharf and vsftpd, plain FTP, passive`)
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s), load average ${fmt(load1, 2)} ${fmt(load5, 2)}; ${new Date().toISOString()}\n`,
  )
  const src = await makeRandomFile(work, MB)
  const vsftpd = await startVsftpd(work)
  const reference = {
    label: 'vsftpd',
    cpu: () => endedChildrenCpu(vsftpd.proc.child.pid),
    port: vsftpd.port,
    login: 'anonymous:',
    checkUpload: () => checkMd5(path.join(vsftpd.files, 'large.bin'), src, 'vsftpd: uploaded copy'),
    removeUpload: () => fs.rm(path.join(vsftpd.files, 'large.bin')),
  }

  const targets = [{ label: 'SQLite' }]
  if (PG_URL) targets.push({ label: 'PostgreSQL', pg: true })
  const rows = [['run', 'MB/s', 'seconds', 'Wharf/vsftpd', 'server CPU s', 'Wharf peak RSS MiB', 'targets']]
  const verdicts = []
  const mbps = (ms) => src.size / 1024 / 1024 / (ms / 1000)
  try {
    for (const t of targets) {
      let url
      if (t.pg) {
        const d = await createPgDatabase(PG_URL)
        cleanups.push(() => dropPgDatabase(PG_URL, d.name))
        url = d.url
      }
      const ftpPort = await freePort()
      const w = await startWharf(`Wharf, ${t.label}`, url, {
        FTP_ENABLED: 'true',
        FTP_PORT: String(ftpPort),
        FTP_HOST: '127.0.0.1',
      })
      try {
        await waitForGreeting(ftpPort, w.proc, '220', 'FTP')
        const remote = '/large.bin'
        const wharf = {
          label: w.label,
          cpu: () => cpuSeconds(w.proc.child.pid),
          port: ftpPort,
          // The bootstrap admin logs in with its password, as a partner's script would.
          login: `admin:${w.env.ADMIN_PASSWORD}`,
          // The size as the API gives it (the bytes are checked by the download's md5).
          // Waits for the background checksums too, after the upload's clock stopped (as
          // bench/transfer.js and bench/sftp.js do): hashing the gigabyte just uploaded would
          // otherwise run into the download measured next.
          checkUpload: async () => {
            let f
            for (let i = 0; i < 1200; i++) {
              f = await json(await fetch(`${w.api}/files${remote}`, { headers: w.headers }), 'GET /files')
              if (f.md5 !== null) break
              await new Promise((r) => setTimeout(r, 50))
            }
            if (f.size !== src.size || f.md5 !== src.md5)
              throw new Error(`${w.label}: uploaded file is ${f.size} bytes, md5 ${f.md5}`)
          },
          removeUpload: async () => {
            await json(
              await fetch(`${w.api}/files${remote}`, { method: 'DELETE', headers: w.headers }),
              'DELETE /files',
            )
          },
        }
        const before = await memory(w.proc.child.pid)
        // vsftpd before and after Wharf, so that drift of the machine's load hits both sides.
        const v1 = await roundTrip(reference, src, work)
        const wr = await roundTrip(wharf, src, work)
        const v2 = await roundTrip(reference, src, work)
        const mem = await memory(w.proc.child.pid)
        const memOk = mem.peak < TARGET_RSS_MB
        console.log(
          `  ${w.label}: RSS ${fmt(before.now)} MiB before the transfers, peak ${fmt(mem.peak)} MiB (start-up included)`,
        )
        for (const [what, wharfMs, refMs, wharfCpu, refCpu] of [
          ['upload', wr.up, (v1.up + v2.up) / 2, wr.upCpu, (v1.upCpu + v2.upCpu) / 2],
          ['download', wr.down, (v1.down + v2.down) / 2, wr.downCpu, (v1.downCpu + v2.downCpu) / 2],
        ]) {
          const ratio = refMs / wharfMs
          const ok = ratio >= TARGET_RATIO
          verdicts.push([`${what}, ${t.label}: Wharf at least ${TARGET_RATIO} of vsftpd's MB/s`, ok])
          rows.push([
            `${what}, Wharf (${t.label})`,
            fmt(mbps(wharfMs)),
            fmt(wharfMs / 1000, 1),
            fmt(ratio, 2),
            fmt(wharfCpu, 1),
            fmt(mem.peak),
            ok && memOk ? 'met' : 'MISSED',
          ])
          rows.push([
            `${what}, vsftpd (mean of 2)`,
            fmt(mbps(refMs)),
            fmt(refMs / 1000, 1),
            '1.00',
            fmt(refCpu, 1),
            '',
            '',
          ])
        }
        verdicts.push([`Wharf (${t.label}) peak RSS under ${TARGET_RSS_MB} MiB`, memOk])
      } finally {
        await stopChild(w.proc)
      }
    }
    console.log(`\n${table(rows)}\n`)
    for (const [what, ok] of verdicts) console.log(`${ok ? 'met   ' : 'MISSED'}  ${what}`)
    const allOk = verdicts.every(([, ok]) => ok)
    console.log(`\nTargets: ${allOk ? 'met' : 'MISSED'}`)
    if (profilesUsed()) console.log(`CPU profiles: ${profilesUsed()}`)
  } finally {
    await stopChild(vsftpd.proc, 2000)
    await runCleanups()
  }
}

const watchdog = setTimeout(
  () => {
    console.error('bench: gave up after the time limit')
    abort(1)
  },
  (120 + MB * 1.5 * (PG_URL ? 2 : 1)) * 1000,
)
main()
  .catch(async (err) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
    process.exitCode = 1
    // vsftpd and Wharf are killed and the temporary folders removed on the way out.
    await runCleanups()
  })
  .finally(() => clearTimeout(watchdog))
