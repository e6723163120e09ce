import { ERRORS } from '../api/error-factories.js'
import type { ApiError } from '../api/errors.js'

interface RouteEntry {
  method: string
  url: string
}

/** find-my-way's route syntax as a pattern: `:name` is one segment, `*` the rest of the path. */
function patternOf(url: string): RegExp {
  const body = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => {
      if (part === '*') return '.*'
      if (part.startsWith(':')) return '[^/]+'
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('')
  return new RegExp(`^${body}$`)
}

/**
 * The methods each path has, from the app's route table, for the `Allow` header of a 405. It is
 * read at the first wrong request, when every route is registered; wrong requests are rare, so
 * trying each pattern in turn costs nothing that matters.
 */
export function allowedMethods(routes: RouteEntry[]): (path: string) => string[] {
  let patterns: { method: string; pattern: RegExp }[] | undefined
  return (path) => {
    patterns ??= routes.map((r) => ({ method: r.method, pattern: patternOf(r.url) }))
    const methods = new Set(patterns.filter((p) => p.pattern.test(path)).map((p) => p.method))
    // Fastify answers HEAD wherever there is a GET.
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods].sort()
  }
}

/** 405 with `Allow` for a method the path lacks; plain 404 when no method has the path. */
export function noRouteError(method: string, path: string, allowed: string[]): ApiError {
  if (allowed.length === 0) return ERRORS.notFound(`No such endpoint: ${method} ${path}`)
  const allow = allowed.join(', ')
  return ERRORS.methodNotAllowed(`${method} is not allowed on ${path}: use ${allow}`, {
    headers: { Allow: allow },
  })
}
