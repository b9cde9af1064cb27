/**
 * The endpoints that read the Responses API's state (`[responses]` on):
 * `GET /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` (paginated
 * as the API does: `limit` 1–100, default 20; `order` `desc` by default;
 * `after`/`before` an item id) and `DELETE /v1/responses/{id}`, in the API's
 * shapes, for the caller that stored the response (another caller's id is
 * not found, as an unknown or expired one).
 *
 * An id the store never kept, for any caller, may be a native Responses
 * provider's own (OpenAI, Azure): the request is forwarded as it is to that
 * provider, `x-genai-provider`'s or the only one configured (several and no
 * header: not found). An id the store kept for another caller is never
 * forwarded (the gateway's credential could make the provider answer it).
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { GatewayError } from "../domain/index.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import { attemptScoped, header, jsonReply } from "../pipeline/index.ts"
import type { Answer, StoredItem, StoredResponse } from "../pipeline/index.ts"
import type { CompiledProvider } from "../providers/adapter.ts"
import type { ProviderClient } from "../providers/transport.ts"
import type { Project } from "../tenancy/project.ts"
import type { HttpRequestContext } from "./context.ts"
import type { ProjectResolver } from "./project.ts"
import { callProvider } from "./provider-call.ts"
import { responseScopeOf, unavailableNoted } from "./responses-state.ts"
import type { ResponsesState } from "./responses-state.ts"
import type { RouteDef } from "./router.ts"

const notFound = (id: string) => new GatewayError({ status: 404, code: "not_found", message: `Response with id '${id}' not found.` })

const invalid = (param: string, message: string) => new GatewayError({ status: 400, code: "invalid_request", message, param })

/** A stored response as the API's Response object. */
export const responseObjectOf = (stored: StoredResponse): Record<string, unknown> => ({
  id: stored.id,
  object: "response",
  created_at: stored.createdAt,
  status: stored.status,
  error: null,
  incomplete_details: null,
  instructions: stored.instructions,
  model: stored.model,
  output: stored.output,
  previous_response_id: stored.previousResponseId,
  store: true,
  usage: stored.usage
})

/** An input item as the API lists it: a message with its type and its text as a content part. */
const listedItem = (item: StoredItem): StoredItem => {
  if (item.type !== undefined && item.type !== "message") return item
  const text = item.role === "assistant" ? "output_text" : "input_text"
  const content = typeof item.content === "string" ? [{ type: text, text: item.content }] : item.content
  return { ...item, type: "message", content }
}

/** The request's input items as listed, each with an id (the stored one, else one derived from its place). */
const inputItems = (stored: StoredResponse): ReadonlyArray<StoredItem> =>
  stored.input.map((item, index) => listedItem(typeof item.id === "string" ? item : { id: `${stored.id}_input_${index}`, ...item }))

const LIMIT = /^(?:[1-9]\d?|100)$/

/** One page of the input items, or the 400 naming the query parameter. */
export const inputItemsPage = (stored: StoredResponse, query: URLSearchParams): Record<string, unknown> | GatewayError => {
  const limitText = query.get("limit") ?? "20"
  if (!LIMIT.test(limitText)) return invalid("limit", "limit: expected an integer from 1 to 100")
  const order = query.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") return invalid("order", "order: expected 'asc' or 'desc'")
  const all = order === "asc" ? inputItems(stored) : [...inputItems(stored)].reverse()
  let items = all
  for (const [param, keepAfter] of [["after", true], ["before", false]] as const) {
    const cursor = query.get(param)
    if (cursor === null) continue
    const at = items.findIndex((item) => item.id === cursor)
    if (at < 0) return invalid(param, `${param}: no input item with id '${cursor}'`)
    items = keepAfter ? items.slice(at + 1) : items.slice(0, at)
  }
  const data = items.slice(0, Number(limitText))
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: items.length > data.length
  }
}

/** The native Responses provider an id the store never kept may belong to: `x-genai-provider`'s, else the only one. */
export const nativeResponsesProvider = (providers: ReadonlyMap<string, CompiledProvider>, requested: string | undefined): CompiledProvider | undefined => {
  if (requested !== undefined) {
    const provider = providers.get(requested.trim())
    return provider?.responsesApi === true ? provider : undefined
  }
  let only: CompiledProvider | undefined
  for (const provider of providers.values()) {
    if (!provider.responsesApi) continue
    if (only !== undefined) return undefined
    only = provider
  }
  return only
}

export const responsesRoutes = (projectOf: ProjectResolver, state: ResponsesState, client: ProviderClient["Service"]): ReadonlyArray<RouteDef<never>> => {
  /** An id no caller's store kept: the native provider's answer, else not found. */
  const forwarded = (ctx: HttpRequestContext, project: Project, id: string, suffix: string): Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope> => {
    const provider = nativeResponsesProvider(project.table.providers, header(ctx, "x-genai-provider"))
    if (provider === undefined) return Effect.fail(notFound(id))
    return attemptScoped(callProvider(ctx, { client, settings: project.settings, provider, operation: "responses", suffix: `/${encodeURIComponent(id)}${suffix}` }))
  }
  /** `use` on the caller's stored response; else the native provider's answer (at `suffix` after the id), else not found. */
  const withStored = (
    suffix: string,
    use: (ctx: HttpRequestContext, project: Project, stored: StoredResponse) => Effect.Effect<Answer, AnyGatewayFailure>
  ) =>
  (ctx: HttpRequestContext): Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope> =>
    Effect.gen(function*() {
      const project = yield* projectOf(ctx)
      const id = ctx.params.response_id
      const read = yield* unavailableNoted(ctx.log, state.store.get(responseScopeOf(state, { ctx, project }), id))
      if (read.stored !== undefined) return yield* use(ctx, project, read.stored)
      if (read.claimed) return yield* notFound(id)
      return yield* forwarded(ctx, project, id, suffix)
    })
  const retrieve = withStored("", (ctx, _project, stored) => Effect.succeed(jsonReply(ctx, 200, responseObjectOf(stored))))
  const listInput = withStored("/input_items", (ctx, _project, stored) => {
    const page = inputItemsPage(stored, new URLSearchParams(ctx.query))
    return page instanceof GatewayError ? Effect.fail(page) : Effect.succeed(jsonReply(ctx, 200, page))
  })
  const remove = withStored("", (ctx, project, stored) =>
    Effect.map(unavailableNoted(ctx.log, state.store.remove(responseScopeOf(state, { ctx, project }), stored.id)), () =>
      jsonReply(ctx, 200, { id: stored.id, object: "response", deleted: true })))
  return [
    { method: "GET", path: "/v1/responses/{response_id}", handler: retrieve },
    { method: "GET", path: "/v1/responses/{response_id}/input_items", handler: listInput },
    { method: "DELETE", path: "/v1/responses/{response_id}", handler: remove }
  ]
}
