import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyPluginAsync, FastifyTypeProvider, RawServerDefault } from 'fastify'

/**
 * What a route receives (params, query string, body) typed from its TypeBox schemas by Fastify's
 * TypeBox type provider. Types only: the validator compiler stays Wharf's own (lazy-compilers.ts,
 * text-values.ts), which converts query strings and XML fields strictly and never coerces JSON.
 * Replies keep Fastify's default typing: handlers send records that format.ts renders as JSON or
 * XML, or streams of file bytes, and the response schemas describe the rendered JSON.
 */
export interface RequestTypes extends FastifyTypeProvider {
  validator: TypeBoxStatic<this['schema']>
}

/** The provider's type for a schema, as Fastify calls it. */
type TypeBoxStatic<S> = (TypeBoxTypeProvider & { schema: S })['validator']

/** A plugin of routes whose requests are typed from their schemas. */
export type Routes = FastifyPluginAsync<Record<never, never>, RawServerDefault, RequestTypes>
