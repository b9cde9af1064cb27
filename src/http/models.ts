/**
 * `GET /v1/models` and `GET /v1/models/{model_id}` (docs/reference/gateway-spec.md §2.1, 4.3.2): served
 * from the catalog, never from an upstream. Callers speaking the Anthropic
 * SDK (header `anthropic-version` or `x-genai-sdk: anthropic`) get the
 * Anthropic list shape so `client.models.list()` parses.
 */
import { Effect } from "effect"
import { clip, GatewayError } from "../domain/index.ts"
import { anthropicModel, openAiModel } from "../routing/catalog.ts"
import type { ModelCatalog } from "../routing/catalog.ts"
import type { Project } from "../tenancy/project.ts"
import { bodyReply, header, JSON_CONTENT_TYPE, jsonReply } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { ProjectResolver } from "./project.ts"
import type { RouteDef } from "./router.ts"

const wantsAnthropic = (ctx: HttpRequestContext): boolean => {
  const sdk = header(ctx, "x-genai-sdk")
  return sdk === "anthropic" || (sdk === undefined && header(ctx, "anthropic-version") !== undefined)
}

/** The catalog the request's gateway key may see (all of it when the gateway is open). */
const catalogFor = (ctx: HttpRequestContext, project: Project): ModelCatalog =>
  ctx.callerKey === undefined ? project.catalog : ctx.callerKey.catalogOf(project)

export const modelRoutes = (projectOf: ProjectResolver): ReadonlyArray<RouteDef<never>> => [
  {
    method: "GET",
    path: "/v1/models",
    handler: (ctx) =>
      Effect.map(projectOf(ctx), (project) => {
        const catalog = catalogFor(ctx, project)
        return bodyReply(ctx, 200, wantsAnthropic(ctx) ? catalog.lists.anthropic : catalog.lists.openAi, JSON_CONTENT_TYPE)
      })
  },
  {
    method: "GET",
    path: "/v1/models/{model_id}",
    handler: (ctx) =>
      Effect.flatMap(projectOf(ctx), (project) => {
        const catalog = catalogFor(ctx, project)
        const id = ctx.params.model_id
        const entry = catalog.byId.get(id)
        const anthropic = wantsAnthropic(ctx)
        if (anthropic) ctx.caller = "anthropic"
        if (entry === undefined) {
          return Effect.fail(
            new GatewayError({ status: 404, code: "model_not_found", message: `The model \`${clip(id)}\` does not exist`, param: "model" })
          )
        }
        return Effect.sync(() => jsonReply(ctx, 200, anthropic ? anthropicModel(entry) : openAiModel(entry)))
      })
  }
]
