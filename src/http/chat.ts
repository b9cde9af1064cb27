/**
 * Chat ingress: `POST /v1/chat/completions` (completions-style) and
 * `POST /v1/messages` (messages-style). `x-genai-sdk` overrides the format
 * the endpoint implies; an unknown value is a 400.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { clip, familyOfSdk, GatewayError, isSdkFormat } from "../domain/index.ts"
import type { AnyGatewayFailure, SdkFormat, WireFamily } from "../domain/index.ts"
import type { CallerFormat } from "../formats/index.ts"
import { header } from "../pipeline/index.ts"
import type { Answer, ChatInput } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { readJsonObject } from "./body.ts"
import type { ProjectResolver } from "./project.ts"
import type { Admit } from "./admission.ts"
import { withResponsesState } from "./responses-state.ts"
import type { ResponsesState } from "./responses-state.ts"
import type { RouteDef } from "./router.ts"
import type { Project } from "../tenancy/project.ts"

export const sdkFormatOf = (ctx: HttpRequestContext, fallback: SdkFormat): Effect.Effect<SdkFormat, GatewayError> => {
  const value = header(ctx, "x-genai-sdk")
  if (value === undefined) return Effect.succeed(fallback)
  const normalized = value.trim().toLowerCase()
  if (isSdkFormat(normalized)) return Effect.succeed(normalized)
  return Effect.fail(
    new GatewayError({ status: 400, code: "invalid_request", message: `x-genai-sdk must be one of openai, anthropic, azure; got "${clip(value)}"` })
  )
}

/** Reads and checks the chat body's routing fields: `model` (required string) and `stream`. */
export const chatInput = (
  ctx: HttpRequestContext,
  project: Project,
  family: WireFamily,
  maxBodyBytes: number
): Effect.Effect<ChatInput, GatewayError> =>
  Effect.flatMap(readJsonObject(ctx, maxBodyBytes), ({ raw, json }) => {
    const model = json.model
    if (typeof model !== "string" || model === "") {
      return Effect.fail(new GatewayError({ status: 400, code: "invalid_request", message: "model: required, a non-empty string", param: "model" }))
    }
    const stream = json.stream
    if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
      return Effect.fail(new GatewayError({ status: 400, code: "invalid_request", message: "stream: expected a boolean", param: "stream" }))
    }
    return Effect.succeed({ ctx, project, caller: family, raw, json, model, stream: stream === true })
  })

const hasMessagesMarkers = (json: Readonly<Record<string, unknown>>): boolean => {
  if (json.system !== undefined) return true
  if (!Array.isArray(json.messages)) return false
  return json.messages.some((message) =>
    Array.isArray((message as { content?: unknown })?.content) &&
    ((message as { content: Array<{ type?: unknown }> }).content).some((part) => part?.type === "tool_use" || part?.type === "tool_result")
  )
}

/**
 * `/v1/responses` accepts three shapes (docs/reference/DESIGN.md): `x-genai-sdk: anthropic`
 * or a messages-style body → messages-style; `input` → the Responses API;
 * otherwise completions-style. Each is answered in its own format.
 *
 * Deliberately narrower than docs/reference/DESIGN.md's "`messages` plus `max_tokens`":
 * completions-style bodies carry `max_tokens` all the time, so only markers
 * that exist in messages-style bodies alone decide (a top-level `system`,
 * `tool_use`/`tool_result` blocks); `x-genai-sdk: anthropic` settles the rest.
 */
export const responsesShapeOf = (sdk: SdkFormat | undefined, json: Readonly<Record<string, unknown>>): CallerFormat => {
  if (sdk === "anthropic") return "anthropic"
  if (json.input !== undefined) return "responses"
  if (sdk === undefined && hasMessagesMarkers(json)) return "anthropic"
  return "openai"
}

const familyOf = (sdk: SdkFormat | undefined): WireFamily => (sdk === undefined ? "openai" : familyOfSdk(sdk))

export const chatRoutes = (
  projectOf: ProjectResolver,
  runChat: (input: ChatInput) => Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope>,
  maxBodyBytes: number,
  admit?: Admit | undefined,
  /** The Responses store (`[responses]` on); undefined, requests in the Responses shape run as they are. */
  state?: ResponsesState | undefined
): ReadonlyArray<RouteDef<never>> => {
  // With limits, the request is admitted between its body and its program; without, nothing runs between.
  const run = admit === undefined
    ? runChat
    : (input: ChatInput) =>
      Effect.andThen(
        admit({ ctx: input.ctx, project: input.project, endpoint: "chat", model: input.model, json: input.json, bodyBytes: input.raw.byteLength }),
        runChat(input)
      )
  // Eager: the format and (with a static configuration) the project are known at once; only the body is waited for.
  const handler = (fallback: SdkFormat) => (ctx: HttpRequestContext) =>
    Effect.flatMapEager(sdkFormatOf(ctx, fallback), (sdk) => {
      const family = familyOfSdk(sdk)
      ctx.caller = family
      return Effect.flatMapEager(projectOf(ctx), (project) => Effect.flatMap(chatInput(ctx, project, family, maxBodyBytes), run))
    })
  const runResponses = state === undefined ? run : withResponsesState(state, run)
  const responses = (ctx: HttpRequestContext) =>
    Effect.gen(function*() {
      const sdk = header(ctx, "x-genai-sdk") === undefined ? undefined : yield* sdkFormatOf(ctx, "openai")
      if (sdk === "anthropic") ctx.caller = "anthropic"
      const project = yield* projectOf(ctx)
      const input = yield* chatInput(ctx, project, familyOf(sdk), maxBodyBytes)
      const caller = responsesShapeOf(sdk, input.json)
      ctx.caller = caller === "anthropic" ? "anthropic" : "openai"
      return yield* (caller === "responses" ? runResponses : run)({ ...input, caller })
    })
  return [
    { method: "POST", path: "/v1/chat/completions", handler: handler("openai") },
    { method: "POST", path: "/v1/messages", handler: handler("anthropic") },
    { method: "POST", path: "/v1/responses", handler: responses }
  ]
}
