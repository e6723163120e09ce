import { translateStorageError } from '../db/errors.js'
import type { BlobStore } from './blob-store.js'

/**
 * The blob store as callers see it: a write that meets a full disk (ENOSPC, or EDQUOT for a
 * quota) fails with the API's 507 `service-unavailable/storage-full`, its cause kept for the log,
 * whichever route or job asked. Every other error passes unchanged.
 */
export function guardStorageFull(store: BlobStore): BlobStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args)
        if (!(result instanceof Promise)) return result
        return result.catch((err: unknown) => {
          throw translateStorageError(err)
        })
      }
    },
  })
}
