import { Type } from '@sinclair/typebox'
import { APP_LIST } from '../../modules/apps/app-service.js'
import type { HttpContext } from '../http-context.js'
import { sendPage } from '../pagination.js'
import type { Routes } from '../route-types.js'
import { errorResponses, listQuery, Nullable } from '../schemas.js'

const Str = (description: string) => Nullable(Type.String({ description }))

export const AppSchema = Type.Object(
  {
    name: Type.String(),
    extended_description: Str('Long description'),
    short_description: Str('Short description'),
    // Not Type.Record: its patternProperties reach Swagger 2 as `additionalProperties: string`.
    documentation_links: Type.Unsafe<Record<string, string>>(
      Type.Object({}, { additionalProperties: Type.String(), description: 'Link name → URL' }),
    ),
    icon_url: Str('Icon'),
    logo_url: Str('Full-size logo'),
    screenshot_list_urls: Type.Array(Type.String()),
    logo_thumbnail_url: Str('Logo thumbnail'),
    sso_strategy_type: Str('Associated SSO strategy type, if any'),
    remote_server_type: Str('Associated remote server type, if any'),
    folder_behavior_type: Str('Associated folder behavior type, if any'),
    external_homepage_url: Str('Link to external homepage'),
    marketing_youtube_url: Str('Marketing video page'),
    tutorial_youtube_url: Str('Tutorial video page'),
    app_type: Type.String({
      description: 'sdk, sso, remote_server, folder_behavior, client_app or app_integration',
    }),
    featured: Type.Boolean({ description: 'Whether the app is featured in the listing' }),
  },
  { $id: 'App', title: 'App' },
)

const ListQuery = listQuery({}, APP_LIST)

export function appRoutes(c: HttpContext): Routes {
  const svc = c.services.apps
  return async (app) => {
    app.get(
      '/apps',
      {
        config: { xml: ['apps', 'app'] },
        schema: {
          summary: 'List the integration catalog',
          tags: ['apps'],
          querystring: ListQuery,
          response: { 200: Type.Array(AppSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendPage(reply, await svc.list(request.principal, request.query)),
    )
  }
}
