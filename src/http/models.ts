/**
 * `GET /v1/models` and `GET /v1/models/{model_id}` (docs/reference/gateway-spec.md §2.1, 4.3.2): served
 * from the catalog, never from an upstream. Callers speaking the Anthropic
 * SDK (header `anthropic-version` or `x-genai-sdk: anthropic`) get the
 * Anthropic list shape so `client.models.list()` parses.
 */
import { Effect } from "effect"
import { clip, GatewayError } from "../domain/index.ts"
import type { CatalogEntry, ModelCatalog } from "../routing/catalog.ts"
import { bodyReply, header, JSON_CONTENT_TYPE, jsonReply } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { ProjectResolver } from "./project.ts"
import type { RouteDef } from "./router.ts"

const EPOCH = "1970-01-01T00:00:00Z"

const openAiModel = (entry: CatalogEntry) => ({ id: entry.id, object: "model", created: 0, owned_by: entry.ownedBy })
const anthropicModel = (entry: CatalogEntry) => ({ type: "model", id: entry.id, display_name: entry.id, created_at: EPOCH })

const wantsAnthropic = (ctx: HttpRequestContext): boolean => {
  const sdk = header(ctx, "x-genai-sdk")
  return sdk === "anthropic" || (sdk === undefined && header(ctx, "anthropic-version") !== undefined)
}

const rendered = new WeakMap<ModelCatalog, { readonly openAi: string; readonly anthropic: string }>()

/** The two list bodies of a catalog, rendered once per catalog (a project's configuration version). */
const listsOf = (catalog: ModelCatalog) => {
  let lists = rendered.get(catalog)
  if (lists === undefined) {
    lists = {
      openAi: JSON.stringify({ object: "list", data: catalog.entries.map(openAiModel) }),
      anthropic: JSON.stringify({
        data: catalog.entries.map(anthropicModel),
        has_more: false,
        first_id: catalog.entries[0]?.id ?? null,
        last_id: catalog.entries[catalog.entries.length - 1]?.id ?? null
      })
    }
    rendered.set(catalog, lists)
  }
  return lists
}

export const modelRoutes = (projectOf: ProjectResolver): ReadonlyArray<RouteDef<never>> => [
  {
    method: "GET",
    path: "/v1/models",
    handler: (ctx) =>
      Effect.map(projectOf(ctx), ({ catalog }) => {
        const lists = listsOf(catalog)
        return bodyReply(ctx, 200, wantsAnthropic(ctx) ? lists.anthropic : lists.openAi, JSON_CONTENT_TYPE)
      })
  },
  {
    method: "GET",
    path: "/v1/models/{model_id}",
    handler: (ctx) =>
      Effect.flatMap(projectOf(ctx), ({ catalog }) => {
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
