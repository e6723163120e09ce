import type { Selectable } from 'kysely'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { SitesTable } from '../../db/schema.js'

/** A site's password rules (Files.com's `Site` fields; docs/decisions.md, "Password rules"). */
export interface PasswordRules {
  minLength: number
  requireLetter: boolean
  requireMixed: boolean
  requireNumber: boolean
  requireSpecial: boolean
  /** How many of the user's latest passwords (the current one first) a new one may not repeat. */
  maxPrior: number
  /** Days a password stays valid; null: forever. */
  validityDays: number | null
}

/** What Wharf has always required, and a new site starts with. */
export const DEFAULT_RULES: PasswordRules = {
  minLength: 8,
  requireLetter: false,
  requireMixed: false,
  requireNumber: false,
  requireSpecial: false,
  maxPrior: 0,
  validityDays: null,
}

/** Bounds of the settings: never under Wharf's own 8 characters, nor past the 1024 a password may have. */
export const MIN_LENGTH_FLOOR = 8
export const MIN_LENGTH_CEILING = 128
/** Each prior password costs one slow hash at every change: a bound keeps a change quick. */
export const MAX_PRIOR_CEILING = 24
export const VALIDITY_DAYS_CEILING = 3650

export type RuleColumns = Pick<
  Selectable<SitesTable>,
  | 'password_min_length'
  | 'password_require_letter'
  | 'password_require_mixed'
  | 'password_require_number'
  | 'password_require_special'
  | 'max_prior_passwords'
  | 'password_validity_days'
>

export const RULE_COLUMNS = [
  'password_min_length',
  'password_require_letter',
  'password_require_mixed',
  'password_require_number',
  'password_require_special',
  'max_prior_passwords',
  'password_validity_days',
] as const

export function rulesFromColumns(row: RuleColumns): PasswordRules {
  return {
    minLength: row.password_min_length,
    requireLetter: row.password_require_letter === 1,
    requireMixed: row.password_require_mixed === 1,
    requireNumber: row.password_require_number === 1,
    requireSpecial: row.password_require_special === 1,
    maxPrior: row.max_prior_passwords,
    validityDays: row.password_validity_days,
  }
}

/** The rules as the Site resource shows them. */
export interface PasswordRulesJson {
  password_min_length: number
  password_require_letter: boolean
  password_require_mixed: boolean
  password_require_number: boolean
  password_require_special: boolean
  max_prior_passwords: number
  password_validity_days: number | null
}

export function toRulesJson(r: PasswordRules): PasswordRulesJson {
  return {
    password_min_length: r.minLength,
    password_require_letter: r.requireLetter,
    password_require_mixed: r.requireMixed,
    password_require_number: r.requireNumber,
    password_require_special: r.requireSpecial,
    max_prior_passwords: r.maxPrior,
    password_validity_days: r.validityDays,
  }
}

export type RulesInput = Partial<{ [K in keyof PasswordRulesJson]: PasswordRulesJson[K] | null }>

const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v)

/**
 * The columns a change of the rules writes (only what differs), or model errors naming each bad
 * field. `password_validity_days` null or 0 means "forever".
 */
export function rulesPatch(
  current: PasswordRules,
  input: RulesInput,
  errors: ModelErrors,
): Partial<RuleColumns> {
  const patch: Partial<RuleColumns> = {}
  const v = input.password_min_length
  if (v !== undefined) {
    if (!isWhole(v) || v < MIN_LENGTH_FLOOR || v > MIN_LENGTH_CEILING)
      addModelError(
        errors,
        'password_min_length',
        `must be a whole number from ${MIN_LENGTH_FLOOR} to ${MIN_LENGTH_CEILING}`,
      )
    else if (v !== current.minLength) patch.password_min_length = v
  }
  const flags = [
    ['password_require_letter', 'requireLetter'],
    ['password_require_mixed', 'requireMixed'],
    ['password_require_number', 'requireNumber'],
    ['password_require_special', 'requireSpecial'],
  ] as const
  for (const [field, key] of flags) {
    const f = input[field]
    if (f === undefined) continue
    if (typeof f !== 'boolean') addModelError(errors, field, 'must be true or false')
    else if (f !== current[key]) patch[field] = f ? 1 : 0
  }
  const prior = input.max_prior_passwords
  if (prior !== undefined) {
    if (!isWhole(prior) || prior < 0 || prior > MAX_PRIOR_CEILING)
      addModelError(errors, 'max_prior_passwords', `must be a whole number from 0 to ${MAX_PRIOR_CEILING}`)
    else if (prior !== current.maxPrior) patch.max_prior_passwords = prior
  }
  if (input.password_validity_days !== undefined) {
    const days = checkValidityDays(input.password_validity_days, errors)
    if (days !== undefined && days !== current.validityDays) patch.password_validity_days = days
  }
  return patch
}

/** A validity in days (site or user): null or 0 for none, else 1 to 3650; undefined when refused. */
export function checkValidityDays(v: unknown, errors: ModelErrors): number | null | undefined {
  if (v === null || v === 0) return null
  if (!isWhole(v) || v < 1 || v > VALIDITY_DAYS_CEILING) {
    addModelError(
      errors,
      'password_validity_days',
      `must be a whole number from 1 to ${VALIDITY_DAYS_CEILING}, or null for none`,
    )
    return undefined
  }
  return v
}

const LETTER = /\p{L}/u
const UPPER = /\p{Lu}/u
const LOWER = /\p{Ll}/u
const DIGIT = /\p{Nd}/u
const SPECIAL = /[^\p{L}\p{N}]/u

/**
 * The rules a password breaks that need no stored hash: length, the character classes, and the
 * username (in any letter case). Messages name the rule, under `field`.
 */
export function checkAgainstRules(
  rules: PasswordRules,
  password: string,
  username: string | null,
  errors: ModelErrors,
  field = 'password',
): void {
  if ([...password].length < rules.minLength)
    addModelError(errors, field, `is too short (minimum is ${rules.minLength} characters)`)
  if (rules.requireLetter && !LETTER.test(password)) addModelError(errors, field, 'must contain a letter')
  if (rules.requireMixed && !(UPPER.test(password) && LOWER.test(password)))
    addModelError(errors, field, 'must contain both upper-case and lower-case letters')
  if (rules.requireNumber && !DIGIT.test(password)) addModelError(errors, field, 'must contain a number')
  if (rules.requireSpecial && !SPECIAL.test(password))
    addModelError(errors, field, 'must contain a special character (not a letter or a number)')
  if (username && password.toLowerCase() === username.toLowerCase())
    addModelError(errors, field, 'must not be the username')
}

/**
 * A password Wharf makes up (`wharf users reset-password`) that the rules take: random text from
 * `generate`, as long as the rules ask, with a letter pair, a digit and a `-` added when asked for.
 */
export function completeForRules(generate: () => string, rules: PasswordRules): string {
  let out = generate()
  while (out.length < rules.minLength) out += generate()
  if (rules.requireLetter || rules.requireMixed) out += 'Qz'
  if (rules.requireNumber) out += '7'
  if (rules.requireSpecial) out += '-'
  return out
}
