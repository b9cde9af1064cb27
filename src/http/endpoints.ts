/**
 * The JSON model endpoints besides chat (docs/reference/gateway-spec.md §4, 4.3): embeddings, image
 * generation, text-to-speech, rerank and token counting. Each reads a JSON
 * body with a `model`, then runs the shared proxy program; the response is
 * the provider's own, forwarded as it arrives.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { GatewayError } from "../domain/index.ts"
import type { AnyGatewayFailure, Capability } from "../domain/index.ts"
import { jsonBody } from "../pipeline/index.ts"
import type { Answer, ProxyInput } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { Operation } from "../providers/adapter.ts"
import type { RequestEndpoint } from "../routing/table.ts"
import { readJsonObject } from "./body.ts"
import { sdkFormatOf } from "./chat.ts"
import type { ProjectResolver } from "./project.ts"
import type { Admit } from "./admission.ts"
import type { RouteDef } from "./router.ts"
import type { Surface } from "../pipeline/index.ts"

interface JsonEndpoint {
  readonly path: string
  /** What the input guardrail reads of the body. */
  readonly surface: Surface
  readonly operation: Operation
  readonly endpoint: RequestEndpoint
  readonly capability: Capability
  /** Fields that must be present (besides `model`), with their JSON type. */
  readonly required: ReadonlyArray<readonly [field: string, type: "string" | "array" | "string|array"]>
  readonly caller: "openai" | "anthropic"
}

const ENDPOINTS: ReadonlyArray<JsonEndpoint> = [
  { path: "/v1/embeddings", surface: "embeddings", operation: "embeddings", endpoint: "embeddings", capability: "embeddings", required: [["input", "string|array"]], caller: "openai" },
  { path: "/v1/images/generations", surface: "image_generation", operation: "image_generation", endpoint: "image_generation", capability: "image_generation", required: [["prompt", "string"]], caller: "openai" },
  { path: "/v1/audio/speech", surface: "audio_speech", operation: "audio_speech", endpoint: "audio_speech", capability: "audio_speech", required: [["input", "string"], ["voice", "string"]], caller: "openai" },
  { path: "/v1/rerank", surface: "rerank", operation: "rerank", endpoint: "rerank", capability: "rerank", required: [["query", "string"], ["documents", "array"]], caller: "openai" },
  { path: "/v1/messages/count_tokens", surface: "count_tokens", operation: "count_tokens", endpoint: "count_tokens", capability: "count_tokens", required: [["messages", "array"]], caller: "anthropic" }
]

const typeOk = (value: unknown, type: "string" | "array" | "string|array"): boolean =>
  type === "string" ? typeof value === "string" : type === "array" ? Array.isArray(value) : typeof value === "string" || Array.isArray(value)

const invalid = (message: string, param: string) => new GatewayError({ status: 400, code: "invalid_request", message, param })

export const jsonEndpointRoutes = (
  projectOf: ProjectResolver,
  runProxy: (input: ProxyInput) => Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope>,
  maxBodyBytes: number,
  admit?: Admit | undefined
): ReadonlyArray<RouteDef<never>> =>
  ENDPOINTS.map((spec) => ({
    method: "POST" as const,
    path: spec.path,
    handler: (ctx: HttpRequestContext) =>
      Effect.gen(function*() {
        const sdk = yield* sdkFormatOf(ctx, spec.caller)
        ctx.caller = sdk === "anthropic" ? "anthropic" : "openai"
        const project = yield* projectOf(ctx)
        const { raw, json } = yield* readJsonObject(ctx, maxBodyBytes)
        const model = json.model
        if (typeof model !== "string" || model === "") return yield* invalid("model: required, a non-empty string", "model")
        for (const [field, type] of spec.required) {
          if (!typeOk(json[field], type)) {
            return yield* invalid(`${field}: required, ${type === "string|array" ? "a string or an array" : `a ${type}`}`, field)
          }
        }
        if (admit !== undefined) yield* admit({ ctx, project, endpoint: spec.endpoint, model, json, bodyBytes: raw.byteLength })
        return yield* runProxy({
          ctx,
          project,
          operation: spec.operation,
          endpoint: spec.endpoint,
          capability: spec.capability,
          model,
          body: jsonBody(raw, json, model),
          family: ctx.caller,
          scan: { surface: spec.surface, json }
        })
      })
  }))
