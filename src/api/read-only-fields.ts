import { ERRORS } from './error-factories.js'

/**
 * The Files.com SDKs' `save()` sends a record's every attribute back, read-only ones included.
 * Those pass when they equal what the API shows for the record; a different value is an attempt
 * to change what cannot be changed, and is refused rather than silently ignored.
 */
export function refuseChangedReadOnly(
  input: Record<string, unknown>,
  shown: object,
  fields: readonly string[],
): void {
  for (const f of fields) {
    if (input[f] !== undefined && input[f] !== (shown as Record<string, unknown>)[f]) {
      throw ERRORS.requestParamsInvalid(`${f} is read-only`)
    }
  }
}
