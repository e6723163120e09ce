import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

/** The ConfigError thrown for `env`, or a failure if none is thrown. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).problems
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`)
}

describe('loadConfig', () => {
  it('takes the webhook endpoints settings, refusing an alert URL that is no http(s) URL', () => {
    const c = loadConfig({})
    expect([c.webhooks.disableAfterDays, c.webhooks.alertUrl]).toEqual([5, undefined])
    const set = loadConfig({
      WEBHOOK_DISABLE_AFTER_DAYS: '2',
      WEBHOOK_ALERT_URL: 'https://ops.example.com/a',
    })
    expect([set.webhooks.disableAfterDays, set.webhooks.alertUrl]).toEqual([2, 'https://ops.example.com/a'])
    expect(problemsOf({ WEBHOOK_ALERT_URL: 'ftp://ops.example.com/a' })).toEqual([
      'WEBHOOK_ALERT_URL must be an http:// or https:// URL, e.g. https://ops.example.com/wharf-alerts',
    ])
  })

  it('has the documented defaults', () => {
    const c = loadConfig({})
    expect(c.host).toBe('127.0.0.1')
    expect(c.port).toBe(8080)
    expect(c.dataDir).toBe(path.resolve('./data'))
    expect(path.isAbsolute(c.dataDir)).toBe(true)
    expect(c.databaseUrl).toBeUndefined()
    expect(c.baseUrl).toBe('http://127.0.0.1:8080')
    expect(c.siteName).toBe('wharf')
    expect(c.adminUsername).toBe('admin')
    expect(c.adminPassword).toBeUndefined()
    expect(c.sessionIdleMinutes).toBe(360)
    expect(c.logLevel).toBe('info')
    expect(c.trustProxy).toBe(false)
    expect(c.rateLimit).toEqual({ perSecond: 50, burst: 200, concurrent: 100 })
    expect(c.login).toEqual({ maxFailuresPerUser: 5, windowMinutes: 15 })
    expect(c.loginDefender).toEqual({ safeList: [], threshold: 20, windowMinutes: 15, banMinutes: 15 })
    expect(c.warnings).toEqual([])
    expect(c.bodyLimitBytes).toBe(1_048_576)
    expect(c.exports).toEqual({ retentionDays: 7, concurrency: 2, pageSize: 5000, leaseSeconds: 60 })
    expect(c.http).toEqual({
      headersTimeoutMs: 30_000,
      idleTimeoutMs: 120_000,
      keepAliveTimeoutMs: 72_000,
      minBodyBytesPerSecond: 1024,
      bodyRateWindowMs: 30_000,
    })
  })

  it('reads the login defender settings, lone addresses of the safe list as ranges of one', () => {
    const c = loadConfig({
      LOGIN_DEFENDER_SAFE_LIST: ' 10.0.0.0/8, 192.0.2.7,2001:DB8::/32 , ::ffff:198.51.100.1,',
      LOGIN_DEFENDER_THRESHOLD: '3',
      LOGIN_DEFENDER_WINDOW_MINUTES: '60',
      LOGIN_DEFENDER_BAN_MINUTES: '1440',
    })
    expect(c.loginDefender).toEqual({
      safeList: ['10.0.0.0/8', '192.0.2.7/32', '2001:db8::/32', '198.51.100.1/32'],
      threshold: 3,
      windowMinutes: 60,
      banMinutes: 1440,
    })
  })

  it('refuses a safe-list entry that is not an address or a range', () => {
    for (const bad of ['example.com', '10.0.0.0/33', '::1/129', '10.0.0.1/8/1', '127.1', '10.0.0.0/']) {
      expect(problemsOf({ LOGIN_DEFENDER_SAFE_LIST: `192.0.2.1, ${bad}` })).toEqual([
        `LOGIN_DEFENDER_SAFE_LIST holds "${bad}", which is not an address or range like 192.0.2.7 or 10.0.0.0/8`,
      ])
    }
    expect(problemsOf({ LOGIN_DEFENDER_THRESHOLD: '0' })[0]).toMatch(/LOGIN_DEFENDER_THRESHOLD/)
  })

  it('ignores LOGIN_MAX_ATTEMPTS_PER_IP with a warning', () => {
    const c = loadConfig({ LOGIN_MAX_ATTEMPTS_PER_IP: '30' })
    expect(c.warnings).toEqual([
      expect.stringMatching(/^LOGIN_MAX_ATTEMPTS_PER_IP is no longer used and is ignored/),
    ])
    expect(c.login).toEqual(loadConfig({}).login)
  })

  it('reads the export settings', () => {
    const c = loadConfig({
      EXPORT_RETENTION_DAYS: '30',
      EXPORT_CONCURRENCY: '4',
      EXPORT_PAGE_SIZE: '100',
      EXPORT_LEASE_SECONDS: '5',
    })
    expect(c.exports).toEqual({ retentionDays: 30, concurrency: 4, pageSize: 100, leaseSeconds: 5 })
  })

  it('treats empty variables as unset', () => {
    const c = loadConfig({
      HOST: '',
      PORT: '',
      DATA_DIR: '',
      DATABASE_URL: '',
      BASE_URL: '',
      ADMIN_PASSWORD: '',
      LOG_LEVEL: '',
    })
    expect(c).toEqual(loadConfig({}))
  })

  it('derives BASE_URL from HOST and PORT, bracketing IPv6 hosts', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).baseUrl).toBe('http://0.0.0.0:9000')
    expect(loadConfig({ HOST: '::1', PORT: '81' }).baseUrl).toBe('http://[::1]:81')
    expect(loadConfig({ HOST: 'files.example.com' }).baseUrl).toBe('http://files.example.com:8080')
  })

  it('takes BASE_URL as given, without a trailing slash', () => {
    expect(loadConfig({ BASE_URL: 'https://files.example.com/' }).baseUrl).toBe('https://files.example.com')
    expect(loadConfig({ BASE_URL: 'https://example.com/wharf//' }).baseUrl).toBe('https://example.com/wharf')
  })

  it('resolves DATA_DIR against the working directory', () => {
    expect(loadConfig({ DATA_DIR: 'var/wharf' }).dataDir).toBe(path.resolve('var/wharf'))
    expect(loadConfig({ DATA_DIR: '/srv/wharf' }).dataDir).toBe('/srv/wharf')
  })

  it('accepts PostgreSQL URLs and the other settings', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgresql://wharf@db:5432/wharf',
      PORT: '0',
      LOG_LEVEL: 'debug',
      ADMIN_PASSWORD: '12345678',
      SESSION_IDLE_MINUTES: '1',
      TRUST_PROXY: 'yes',
      SITE_NAME: 'acme.files',
    })
    expect(c.databaseUrl).toBe('postgresql://wharf@db:5432/wharf')
    expect(c.port).toBe(0)
    expect(c.logLevel).toBe('debug')
    expect(c.adminPassword).toBe('12345678')
    expect(c.sessionIdleMinutes).toBe(1)
    expect(c.trustProxy).toBe(true)
    expect(c.siteName).toBe('acme.files')
    expect(loadConfig({ DATABASE_URL: 'postgres://x' }).databaseUrl).toBe('postgres://x')
  })

  it('reports every bad value together in one ConfigError', () => {
    const env = {
      PORT: 'abc',
      DATABASE_URL: 'mysql://root@localhost/wharf',
      LOG_LEVEL: 'loud',
      ADMIN_PASSWORD: 'short',
      SESSION_IDLE_MINUTES: '0',
    }
    const problems = problemsOf(env)
    expect(problems).toHaveLength(5)
    for (const name of Object.keys(env)) {
      expect(
        problems.filter((p) => p.startsWith(`${name} `)),
        name,
      ).toHaveLength(1)
    }
    let message = ''
    try {
      loadConfig(env)
    } catch (err) {
      message = (err as Error).message
    }
    for (const p of problems) expect(message).toContain(p)
    // The password itself is never repeated in the message.
    expect(message).not.toContain('short"')
  })

  it('refuses each bad value on its own', () => {
    const cases: [Record<string, string>, string][] = [
      [{ PORT: '65536' }, 'PORT'],
      [{ PORT: '-1' }, 'PORT'],
      [{ PORT: '80.5' }, 'PORT'],
      [{ PORT: '0x50' }, 'PORT'],
      [{ DATABASE_URL: 'sqlite:///tmp/x.db' }, 'DATABASE_URL'],
      [{ BASE_URL: 'ftp://files.example.com' }, 'BASE_URL'],
      [{ BASE_URL: 'not a url' }, 'BASE_URL'],
      [{ LOG_LEVEL: 'INFO ' }, 'LOG_LEVEL'],
      [{ ADMIN_PASSWORD: '1234567' }, 'ADMIN_PASSWORD'],
      [{ ADMIN_USERNAME: 'bad user' }, 'ADMIN_USERNAME'],
      [{ SITE_NAME: '-leading-dash' }, 'SITE_NAME'],
      [{ SESSION_IDLE_MINUTES: 'six hours' }, 'SESSION_IDLE_MINUTES'],
      [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
      [{ RATE_LIMIT_PER_SECOND: '0' }, 'RATE_LIMIT_PER_SECOND'],
      [{ BODY_LIMIT_BYTES: '100' }, 'BODY_LIMIT_BYTES'],
      [{ EXPORT_RETENTION_DAYS: '0' }, 'EXPORT_RETENTION_DAYS'],
      [{ EXPORT_CONCURRENCY: 'two' }, 'EXPORT_CONCURRENCY'],
      [{ EXPORT_PAGE_SIZE: '0' }, 'EXPORT_PAGE_SIZE'],
      [{ EXPORT_LEASE_SECONDS: '0' }, 'EXPORT_LEASE_SECONDS'],
      [{ HTTP_HEADERS_TIMEOUT_MS: '0' }, 'HTTP_HEADERS_TIMEOUT_MS'],
      [{ HTTP_IDLE_TIMEOUT_MS: '1m' }, 'HTTP_IDLE_TIMEOUT_MS'],
      [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: '99' }, 'HTTP_KEEP_ALIVE_TIMEOUT_MS'],
      [{ HTTP_MIN_BODY_BYTES_PER_SECOND: '-1' }, 'HTTP_MIN_BODY_BYTES_PER_SECOND'],
      [{ HTTP_BODY_RATE_WINDOW_MS: '0' }, 'HTTP_BODY_RATE_WINDOW_MS'],
    ]
    for (const [env, name] of cases) {
      const problems = problemsOf(env)
      expect(problems, JSON.stringify(env)).toHaveLength(1)
      expect(problems[0]!.startsWith(`${name} `), problems[0]).toBe(true)
    }
  })
})
