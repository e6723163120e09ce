import { CompiledQuery } from 'kysely'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { inlineParameters } from '../src/db/database.js'

const inline = (text: string, ...parameters: unknown[]) =>
  inlineParameters(pg, CompiledQuery.raw(text, parameters))

/** COPY takes no parameters: a statement's values are written into its text. */
describe('values written into a COPY statement', () => {
  it('replaces each placeholder with its value, quoted or parenthesised', () => {
    expect(
      inline('select a from t where b = $1 and c > $2 and d = $3 and e is $4', "it's", -5, true, null),
    ).toBe("select a from t where b = 'it''s' and c > (-5) and d = true and e is null")
    expect(inline('select $10, $1', 1, 2, 3, 4, 5, 6, 7, 8, 9, 'ten')).toBe("select 'ten', (1)")
  })

  it('leaves what looks like a placeholder inside quotes and comments alone', () => {
    expect(
      inline(
        `select '$1', 'it''s $2', "col$1", to_char(x, 'HH24"$1"') -- $1\n, $1 /* $2 */ from t where y = $2`,
        'one',
        2,
      ),
    ).toBe(
      `select '$1', 'it''s $2', "col$1", to_char(x, 'HH24"$1"') -- $1\n, 'one' /* $2 */ from t where y = (2)`,
    )
  })

  it('refuses a value it cannot write as SQL', () => {
    expect(() => inline('select $1', { a: 1 })).toThrow(/cannot be written/)
    expect(() => inline('select $1', Number.NaN)).toThrow(/cannot be written/)
  })
})
