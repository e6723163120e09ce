import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'
import { enforced } from './field-checks.js'
import { fromTextFields } from './text-values.js'

/**
 * Fastify's own schema compilers (Ajv for validation, fast-json-stringify for responses), with
 * each route's functions compiled when a request first needs them instead of all at start-up.
 * Compiling the schemas of every route up front cost ~20 MiB of resident memory (generated code
 * and Ajv's schema environments) for routes a server may never see; compiling one on first use
 * takes a millisecond or two. The compilers, their options and so what they accept and produce
 * are exactly Fastify's defaults: the copies Fastify itself depends on are loaded.
 *
 * Ajv coerces no types (app.ts): path, query and header values, which are always text, are
 * converted strictly by their schema first (text-values.ts); bodies are converted, where they are
 * text, by the body hook.
 *
 * A schema that does not compile now fails its route's first request instead of start-up.
 */

type RouteSchema = { schema: unknown; httpPart?: string; url?: string; method?: string }
type Compile = (route: RouteSchema) => any
type Builder = (...args: any[]) => Compile
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>

const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'))
const ajvCompiler = fromFastify('@fastify/ajv-compiler') as () => Builder
const serializerSelector = fromFastify('@fastify/fast-json-stringify-compiler') as () => Builder

/**
 * Fastify's `schemaController.compilersFactory` for one server, and `compilePending`, which
 * compiles every schema of that server not used yet (tests: a schema that cannot compile fails
 * there, as it failed start-up before).
 */
export function lazyCompilers() {
  const pending = new Set<() => unknown>()

  function once<T>(make: () => T): () => T {
    let made: { value: T } | undefined
    const get = () => {
      if (!made) {
        made = { value: make() }
        pending.delete(get)
      }
      return made.value
    }
    pending.add(get)
    return get
  }

  function lazyValidator(compile: Compile, route: RouteSchema) {
    // With a custom compiler Fastify leaves header schemas as they are instead of lower-casing
    // their property names as Node lower-cases header names: refuse one that would then differ.
    if (route.httpPart === 'headers') checkLowerCaseHeaders(route)
    // Fields whose stated rule a service enforces are validated as field-checks.ts says.
    const get = once(() => compile({ ...route, schema: enforced(route.schema) }))
    const textual = route.httpPart !== 'body'
    // Ajv's calling convention: errors on the function after a failed call; with `schemaEnv`,
    // Fastify passes the parent object so that Ajv can coerce the root value in place.
    const validate = ((data: unknown, ctx?: unknown) => {
      const fn = get()
      if (textual && data !== null && typeof data === 'object')
        fromTextFields(route.schema, data as Record<string, unknown>)
      const ok = ctx === undefined ? fn(data) : fn(data, ctx)
      validate.errors = fn.errors
      return ok
    }) as ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown }
    Object.defineProperty(validate, 'schemaEnv', { get: () => get().schemaEnv })
    return validate
  }

  function lazySerializer(compile: Compile, route: RouteSchema) {
    const get = once(() => compile(route))
    return (payload: unknown) => get()(payload)
  }

  // One pool of compilers per server, as Fastify keeps by default.
  const buildAjv = ajvCompiler()
  const buildSerializer = serializerSelector()
  const compilersFactory = {
    buildValidator: (...args: unknown[]): Compile => {
      const compile = buildAjv(...args)
      return (route) => lazyValidator(compile, route)
    },
    buildSerializer: (...args: unknown[]): Compile => {
      const compile = buildSerializer(...args)
      return (route) => lazySerializer(compile, route)
    },
  }

  return {
    // Fastify's typings describe the default compilers' own signatures; these take the same calls.
    compilersFactory: compilersFactory as unknown as CompilersFactory,
    compilePending(): number {
      const waiting = [...pending]
      for (const get of waiting) get()
      return waiting.length
    },
  }
}

function checkLowerCaseHeaders(route: RouteSchema): void {
  const props = (route.schema as { properties?: Record<string, unknown> } | null)?.properties ?? {}
  for (const name of Object.keys(props)) {
    if (name !== name.toLowerCase())
      throw new Error(`${route.method} ${route.url}: header schema names must be lower case: ${name}`)
  }
}
