import { translateStorageError } from '../db/errors.js'
import type { BlobStore } from './blob-store.js'

/**
 * The blob store as callers see it: a write that meets a full disk (ENOSPC, or EDQUOT for a
 * quota) fails with the API's 507 `service-unavailable/storage-full`, its cause kept for the log,
 * whichever route or job asked. Every other error passes unchanged.
 */
export function guardStorageFull(store: BlobStore): BlobStore {
  // Each method is wrapped once: the store is called on every upload and download.
  const wrapped = new Map<PropertyKey, (...args: unknown[]) => unknown>()
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      let fn = wrapped.get(prop)
      if (!fn) {
        fn = (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args)
          if (!(result instanceof Promise)) return result
          return result.catch((err: unknown) => {
            throw translateStorageError(err)
          })
        }
        wrapped.set(prop, fn)
      }
      return fn
    },
  })
}
