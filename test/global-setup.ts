/** Says plainly, once per run, whether the PostgreSQL half of the suite runs. */
export default function setup(): void {
  if (process.env['TEST_DATABASE_URL']) {
    console.log(
      `\n[wharf] database tests run on SQLite and on PostgreSQL (${redact(process.env['TEST_DATABASE_URL'])})\n`,
    )
  } else {
    console.log(
      '\n[wharf] PostgreSQL tests SKIPPED: TEST_DATABASE_URL is not set, so database tests run on SQLite only.\n' +
        '        Set TEST_DATABASE_URL=postgres://user@host:5432/db to run them on PostgreSQL too (.ci/run does).\n',
    )
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')
}
