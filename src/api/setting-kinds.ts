import { Type } from '@sinclair/typebox'
import { Ajv } from 'ajv'
import envSchema from 'env-schema'

// The kinds of setting Wharf's environment holds (config.ts, SETTINGS), as JSON Schema for
// env-schema: each with its default and, in `errorMessage`, what its problem reads as (`{name}`:
// the setting, `{got}`: the value given).

/** A string setting; `pattern` and `message` (`{got}`: the value given) where it has a form. */
export function text(fallback?: string, pattern?: string, message?: string) {
  return Type.String({
    ...(fallback === undefined ? {} : { default: fallback }),
    ...(pattern === undefined ? {} : { pattern }),
    ...(message === undefined ? {} : { errorMessage: message }),
  })
}

/** A whole number from `min` to `max`, written in decimal digits (not `0x50`, `1e3` or `80.5`). */
export function int(fallback: number, min: number, max: number) {
  return Type.Unsafe<number>({
    allOf: [
      { type: 'string', pattern: '^\\s*\\d+\\s*$' },
      { type: 'integer', minimum: min, maximum: max },
    ],
    default: String(fallback),
    errorMessage: `{name} must be a whole number from ${min} to ${max} (got "{got}")`,
  })
}

const TRUE = ['1', 'true', 'yes', 'on']
const FALSE = ['0', 'false', 'no', 'off']

/** true or false, as 1/0, true/false, yes/no or on/off in any case: read with `isTrue`. */
export function bool(fallback: boolean) {
  return Type.String({
    pattern: `^(${[...TRUE, ...FALSE].map(anyCase).join('|')})$`,
    default: fallback ? 'true' : 'false',
    errorMessage: '{name} must be true or false (got "{got}")',
  })
}

export function isTrue(value: string): boolean {
  return TRUE.includes(value.toLowerCase())
}

/** A pattern matching `word` in any case (JSON Schema's patterns take no flags). */
export function anyCase(word: string): string {
  return [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join('')
}

/**
 * env-schema's Ajv with its options (coercion, defaults, every error at once); `errorMessage` is a
 * note the validation ignores. Integers are checked as text first (their digits), then as numbers:
 * the two `type`s of one setting are meant.
 */
export const settingsAjv = new Ajv({
  allErrors: true,
  removeAdditional: true,
  useDefaults: true,
  coerceTypes: true,
  strictTypes: false,
  keywords: [envSchema.keywords.separator, { keyword: 'errorMessage', schemaType: 'string' }],
})
