// `npm run bench:sftp`: upload and download of one large file with OpenSSH's `sftp` client,
// against Wharf's SFTP front end and, in the same run, against OpenSSH's own sftp-server behind
// an `sshd` the benchmark starts on a loopback port; and Wharf's peak resident memory.
//
// Settings (environment): BENCH_SFTP_MB (1024), BENCH_DATABASE_URL (also runs against
// PostgreSQL), BENCH_PROFILE=1 (CPU profile of Wharf), BENCH_SSHD (/usr/sbin/sshd). Needs OpenSSH's client, server and ssh-keygen (Debian: openssh-client,
// openssh-server); the sshd runs as the current user, who logs in as themselves. See
// docs/performance.md.
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

const MB = intSetting('BENCH_SFTP_MB', 1024, 1, 65536)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const SSHD = process.env['BENCH_SSHD'] || '/usr/sbin/sshd'
const SFTP_SERVER = '/usr/lib/openssh/sftp-server'
const TARGET_RATIO = 0.5
const TARGET_RSS_MB = 200

/**
 * OpenSSH's sshd on a free port of 127.0.0.1 with a configuration of its own: its own host key,
 * the client's key as the only authorized one, Debian's sftp-server as the `sftp` subsystem.
 */
async function startSshd(work, clientPub) {
  const dir = path.join(work, 'sshd')
  await fs.mkdir(dir)
  const hostKey = path.join(dir, 'host_ed25519')
  await runProgram('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey])
  const authorized = path.join(dir, 'authorized_keys')
  await fs.writeFile(authorized, clientPub, { mode: 0o600 })
  const port = await freePort()
  const config = path.join(dir, 'sshd_config')
  await fs.writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'X11Forwarding no',
      'AllowTcpForwarding no',
      'LogLevel ERROR',
      `Subsystem sftp ${SFTP_SERVER}`,
      '',
    ].join('\n'),
  )
  // sshd refuses to start without its privilege-separation folder, which Debian makes only when
  // the system service starts.
  const privsep = '/run/sshd'
  const made = await fs.mkdir(privsep, { mode: 0o755 }).then(
    () => true,
    () => false,
  )
  if (made) cleanups.push(() => fs.rmdir(privsep))
  const proc = startProgram('sshd', SSHD, ['-D', '-e', '-f', config], process.env)
  await waitForGreeting(port, proc, 'SSH-', 'SSH')
  const files = path.join(work, 'openssh-files')
  await fs.mkdir(files)
  return { proc, port, files }
}

/**
 * One `sftp -b` session with the client key: the batch's commands, timed from the start of the
 * process to its end (the SSH handshake and login included, a few ms). With `verbose`, the
 * cipher the two sides agreed on.
 */
async function sftp(port, user, keyFile, work, commands, { verbose = false } = {}) {
  const batch = path.join(work, `batch-${crypto.randomBytes(4).toString('hex')}`)
  await fs.writeFile(batch, `${commands.join('\n')}\n`)
  const args = [
    ...(verbose ? ['-v'] : ['-q']),
    '-b',
    batch,
    '-P',
    String(port),
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-i',
    keyFile,
    `${user}@127.0.0.1`,
  ]
  const t = process.hrtime.bigint()
  const { stderr } = await runProgram('sftp', args, { timeoutMs: (60 + MB) * 1000 })
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  await fs.rm(batch)
  const cipher = /server->client cipher: (\S+) MAC: (\S+)/.exec(stderr)
  return { ms, cipher: cipher ? `${cipher[1]}${cipher[2] === '<implicit>' ? '' : ` + ${cipher[2]}`}` : '' }
}

/** Upload then download of the source through one SFTP server; every copy's md5 is checked. */
async function roundTrip(server, src, work) {
  const dst = path.join(work, `download-${crypto.randomBytes(4).toString('hex')}.bin`)
  const cpu0 = await server.cpu()
  const up = await sftp(server.port, server.user, server.keyFile, work, [`put ${src.file} ${server.remote}`])
  const cpu1 = await server.cpu()
  await server.checkUpload()
  const cpu2 = await server.cpu()
  const down = await sftp(server.port, server.user, server.keyFile, work, [`get ${server.remote} ${dst}`])
  const cpu3 = await server.cpu()
  // Checked after the clock stops, as in bench/transfer.js.
  await checkMd5(dst, src, `${server.label}: downloaded copy`)
  await fs.rm(dst)
  await server.removeUpload()
  const cpu = (a, b) => (a === null || b === null ? Number.NaN : b - a)
  return { up: up.ms, down: down.ms, upCpu: cpu(cpu0, cpu1), downCpu: cpu(cpu2, cpu3) }
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:sftp does)')
  })
  for (const program of [SSHD, SFTP_SERVER]) {
    await fs.access(program).catch(() => {
      throw new Error(`${program} is missing: install OpenSSH's server (Debian: openssh-server)`)
    })
  }
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-sftp-'))
  cleanups.push(() => fs.rm(work, { recursive: true, force: true }))
  const [load1, load5] = os.loadavg()
  console.log(
    `Wharf SFTP benchmark: ${MB} MiB file, OpenSSH's sftp client against Wharf and OpenSSH's sftp-server`,
  )
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s), load average ${fmt(load1, 2)} ${fmt(load5, 2)}; ${new Date().toISOString()}\n`,
  )
  const src = await makeRandomFile(work, MB)
  const keyFile = path.join(work, 'id_ed25519')
  await runProgram('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile])
  const clientPub = await fs.readFile(`${keyFile}.pub`, 'utf8')

  const sshd = await startSshd(work, clientPub)
  const openssh = {
    label: 'OpenSSH',
    cpu: () => endedChildrenCpu(sshd.proc.child.pid),
    port: sshd.port,
    user: os.userInfo().username,
    keyFile,
    remote: path.join(sshd.files, 'large.bin'),
    checkUpload: () => checkMd5(path.join(sshd.files, 'large.bin'), src, 'OpenSSH: uploaded copy'),
    removeUpload: () => fs.rm(path.join(sshd.files, 'large.bin')),
  }
  const probe = await sftp(sshd.port, openssh.user, keyFile, work, ['pwd'], { verbose: true })
  const ciphers = { OpenSSH: probe.cipher }

  const targets = [{ label: 'SQLite' }]
  if (PG_URL) targets.push({ label: 'PostgreSQL', pg: true })
  const rows = [
    ['run', 'MB/s', 'seconds', 'Wharf/OpenSSH', 'server CPU s', 'CPU s/GiB', 'Wharf peak RSS MiB', 'targets'],
  ]
  const verdicts = []
  const mbps = (ms) => src.size / 1024 / 1024 / (ms / 1000)
  // CPU seconds per GiB moved: steadier than MB/s when other work shares the machine's cores.
  const perGiB = (cpu) => cpu / (src.size / 1024 ** 3)
  try {
    for (const t of targets) {
      let url
      if (t.pg) {
        const d = await createPgDatabase(PG_URL)
        cleanups.push(() => dropPgDatabase(PG_URL, d.name))
        url = d.url
      }
      const sftpPort = await freePort()
      const w = await startWharf(`Wharf, ${t.label}`, url, {
        SFTP_ENABLED: 'true',
        SFTP_PORT: String(sftpPort),
        SFTP_HOST: '127.0.0.1',
      })
      try {
        await waitForGreeting(sftpPort, w.proc, 'SSH-', 'SSH')
        // The admin logs in over SFTP with a key registered through the API, as a user would.
        await json(
          await fetch(`${w.api}/public_keys`, {
            method: 'POST',
            headers: { ...w.headers, 'Content-Type': 'application/json' },
            body: JSON.stringify({ title: 'benchmark', public_key: clientPub }),
          }),
          `${w.label}: POST /public_keys`,
        )
        const remote = '/large.bin'
        const wharf = {
          label: w.label,
          cpu: () => cpuSeconds(w.proc.child.pid),
          port: sftpPort,
          user: 'admin',
          keyFile,
          remote,
          // Wharf hashes what it stores, after the upload: the file's md5 as the API gives it
          // once its background job has read the file.
          checkUpload: async () => {
            const get = async () =>
              json(await fetch(`${w.api}/files${remote}`, { headers: w.headers }), 'GET /files')
            let f = await get()
            while (f.md5 === null) {
              await new Promise((r) => setTimeout(r, 50))
              f = await get()
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
        const wprobe = await sftp(sftpPort, 'admin', keyFile, work, ['pwd'], { verbose: true })
        ciphers[w.label] = wprobe.cipher
        const before = await memory(w.proc.child.pid)
        // OpenSSH before and after Wharf, so that drift of the machine's load hits both sides.
        const o1 = await roundTrip(openssh, src, work)
        const wr = await roundTrip(wharf, src, work)
        const o2 = await roundTrip(openssh, src, work)
        const mem = await memory(w.proc.child.pid)
        const memOk = mem.peak < TARGET_RSS_MB
        console.log(
          `  ${w.label}: RSS ${fmt(before.now)} MiB before the transfers, peak ${fmt(mem.peak)} MiB (start-up included)`,
        )
        for (const [what, wharfMs, opensshMs, wharfCpu, opensshCpu] of [
          ['upload', wr.up, (o1.up + o2.up) / 2, wr.upCpu, (o1.upCpu + o2.upCpu) / 2],
          ['download', wr.down, (o1.down + o2.down) / 2, wr.downCpu, (o1.downCpu + o2.downCpu) / 2],
        ]) {
          const ratio = opensshMs / wharfMs
          const ok = ratio >= TARGET_RATIO
          verdicts.push([`${what}, ${t.label}: Wharf at least ${TARGET_RATIO} of OpenSSH's MB/s`, ok])
          rows.push([
            `${what}, Wharf (${t.label})`,
            fmt(mbps(wharfMs)),
            fmt(wharfMs / 1000, 1),
            fmt(ratio, 2),
            fmt(wharfCpu, 1),
            fmt(perGiB(wharfCpu), 1),
            fmt(mem.peak),
            ok && memOk ? 'met' : 'MISSED',
          ])
          rows.push([
            `${what}, OpenSSH (mean of 2)`,
            fmt(mbps(opensshMs)),
            fmt(opensshMs / 1000, 1),
            '1.00',
            fmt(opensshCpu, 1),
            fmt(perGiB(opensshCpu), 1),
            '',
            '',
          ])
        }
        verdicts.push([`Wharf (${t.label}) peak RSS under ${TARGET_RSS_MB} MiB`, memOk])
      } finally {
        await stopChild(w.proc)
      }
    }
    console.log(
      `  ciphers: ${Object.entries(ciphers)
        .map(([k, v]) => `${k} ${v || '?'}`)
        .join('; ')}`,
    )
    console.log(`\n${table(rows)}\n`)
    for (const [what, ok] of verdicts) console.log(`${ok ? 'met   ' : 'MISSED'}  ${what}`)
    const allOk = verdicts.every(([, ok]) => ok)
    console.log(`\nTargets: ${allOk ? 'met' : 'MISSED'}`)
    if (profilesUsed()) console.log(`CPU profiles: ${profilesUsed()}`)
  } finally {
    await stopChild(sshd.proc, 2000)
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
    // The sshd and Wharf are killed and the temporary folders removed on the way out.
    await runCleanups()
  })
  .finally(() => clearTimeout(watchdog))
