/**
 * One model call as the GenAI telemetry records it: the request, the upstream
 * that answered, the outcome and its timing, turned into the span (name and
 * attributes) and the metric attributes. Pure: the recorder (recorder.ts)
 * writes what this builds.
 *
 * One call per request: retries and fallbacks are the gateway's business (the
 * application trace has a span per attempt); the GenAI span describes the
 * attempt whose outcome the caller got, with `gateway.attempts` counting them.
 */
import type { ProviderKind } from "../../../domain/index.ts"
import { ERROR_TYPE, GATEWAY_GENAI, GEN_AI, providerNameOf, SERVER_ADDRESS, SERVER_PORT, serverOf } from "./attributes.ts"
import type { GenAiOperation } from "./attributes.ts"
import { chatRequestAttributes } from "./request.ts"
import type { Attributes, GenAiRequest } from "./request.ts"
import { responseAttributes } from "./response.ts"
import type { GenAiResponseSummary } from "./response.ts"

/** Instants of a call, as `performance.now()` milliseconds. */
export interface GenAiTiming {
  /** The request arrived at the gateway. */
  readonly startedAt: number
  /** The answering attempt's request left for the upstream. */
  readonly attemptStartedAt?: number | undefined
  /** The answering attempt's response head arrived ("the start of the response", docs/reference/gateway-spec.md §6.1.6). */
  readonly responseStartedAt?: number | undefined
  /** The first content token of a stream arrived. */
  readonly firstTokenAt?: number | undefined
  /** The answer was complete (or the call failed). */
  readonly endedAt: number
}

/** The upstream the answering attempt went to. */
export interface GenAiUpstream {
  readonly providerId: string
  readonly kind: ProviderKind
  /** `scheme://host:port` of the provider. */
  readonly origin: string
  /** The model name the provider was asked for. */
  readonly model: string
}

export interface GenAiCall {
  readonly operation: GenAiOperation
  /** The model string the caller sent. */
  readonly requestedModel: string
  readonly upstream: GenAiUpstream
  /** Chat calls: the request as sent (see `GenAiRequest`). */
  readonly request?: GenAiRequest | undefined
  /** Other operations: request attributes built by the caller (e.g. `embeddingsRequestAttributes`). */
  readonly requestAttributes?: Attributes | undefined
  readonly stream: boolean
  readonly response?: GenAiResponseSummary | undefined
  /** The failure's classification (`x-gw-error-code` value), also for a stream that broke after its head. */
  readonly error?: string | undefined
  readonly timing: GenAiTiming
  /** The resolved plan's name: `route::<name>`, `function::<name>` or `<provider>::<model>`. */
  readonly plan?: string | undefined
  readonly variant?: string | undefined
  readonly attempts?: number | undefined
  readonly path?: "fast" | "normalized" | undefined
  readonly projectId?: string | undefined
  /** USD of the request's attempts (spend.ts), when priced. */
  readonly costUsd?: number | undefined
}

const planAttributes = (plan: string | undefined, attributes: Attributes): void => {
  if (plan === undefined) return
  if (plan.startsWith("route::")) attributes[GATEWAY_GENAI.route] = plan.slice(7)
  else if (plan.startsWith("function::")) attributes[GATEWAY_GENAI.function] = plan.slice(10)
}

/** `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `server.*`: what identifies the call on spans and metrics alike. */
const callee = (call: GenAiCall, attributes: Attributes): Attributes => {
  attributes[GEN_AI.operationName] = call.operation
  attributes[GEN_AI.providerName] = providerNameOf(call.upstream.providerId, call.upstream.kind)
  attributes[GEN_AI.requestModel] = call.upstream.model
  const server = serverOf(call.upstream.origin)
  if (server !== undefined) {
    attributes[SERVER_ADDRESS] = server.address
    attributes[SERVER_PORT] = server.port
  }
  return attributes
}

/** Everything `callee` is derived from, as a key: equal keys, equal attributes. */
export const calleeKey = (call: GenAiCall): string => {
  const { upstream } = call
  return `${call.operation}\u0001${upstream.providerId}\u0001${upstream.kind}\u0001${upstream.model}\u0001${upstream.origin}`
}

/** Whether two calls have the same `callee` attributes (cheaper than building their keys: the strings are mostly the configuration's own). */
export const sameCallee = (a: GenAiCall, b: GenAiCall): boolean =>
  a.operation === b.operation && a.upstream.providerId === b.upstream.providerId && a.upstream.kind === b.upstream.kind &&
  a.upstream.model === b.upstream.model && a.upstream.origin === b.upstream.origin

/**
 * A key naming the attributes every call to the same upstream through the same
 * route shares (`genAiIdentityAttributes`): the recorder encodes them once per key.
 */
export const genAiIdentityKey = (call: GenAiCall): string =>
  `${calleeKey(call)}\u0001${call.requestedModel}\u0001${call.plan ?? ""}\u0001${call.variant ?? ""}\u0001${call.path ?? ""}\u0001${call.projectId ?? ""}`

/** Whether two calls have the same identity (equal `genAiIdentityKey`s), without building the keys. */
export const sameIdentity = (a: GenAiCall, b: GenAiCall): boolean =>
  sameCallee(a, b) && a.requestedModel === b.requestedModel && a.plan === b.plan && a.variant === b.variant && a.path === b.path &&
  a.projectId === b.projectId

/**
 * What a call's identity (and its metric series) are derived from, and nothing
 * else: what the recorder keeps of the last call to compare the next with
 * (not the call itself, which holds the captured content).
 */
export const identityOf = (call: GenAiCall): GenAiCall => ({
  operation: call.operation,
  requestedModel: call.requestedModel,
  upstream: call.upstream,
  stream: false,
  timing: NO_TIMING,
  plan: call.plan,
  variant: call.variant,
  path: call.path,
  projectId: call.projectId,
  response: call.response?.model === undefined ? undefined : { model: call.response.model }
})

const NO_TIMING: GenAiTiming = { startedAt: 0, endedAt: 0 }

/** What every call to the same upstream through the same route shares: operation, provider, model, server, the gateway's routing attributes. */
export const genAiIdentityAttributes = (call: GenAiCall): Attributes => {
  const attributes = callee(call, {})
  attributes[GATEWAY_GENAI.requestedModel] = call.requestedModel
  attributes[GATEWAY_GENAI.providerId] = call.upstream.providerId
  planAttributes(call.plan, attributes)
  if (call.variant !== undefined) attributes[GATEWAY_GENAI.variant] = call.variant
  if (call.path !== undefined) attributes[GATEWAY_GENAI.path] = call.path
  if (call.projectId !== undefined) attributes[GATEWAY_GENAI.projectId] = call.projectId
  return attributes
}

/** The span's name: `{gen_ai.operation.name} {gen_ai.request.model}`. */
export const genAiSpanName = (call: GenAiCall): string => `${call.operation} ${call.upstream.model}`

/** The attributes of this call alone: what was asked and answered, the failure, the timing, the attempts. */
export const genAiCallAttributes = (call: GenAiCall, captureContent: boolean): Attributes => {
  const attributes: Attributes = call.request === undefined ? {} : chatRequestAttributes(call.request, captureContent)
  if (call.requestAttributes !== undefined) Object.assign(attributes, call.requestAttributes)
  if (call.error !== undefined) attributes[ERROR_TYPE] = call.error
  // Embeddings produce no output tokens (the conventions record only input tokens for them).
  responseAttributes(call.response, { captureContent, failed: call.error !== undefined, outputTokens: call.operation !== "embeddings" }, attributes)
  const { timing } = call
  if (call.stream && timing.firstTokenAt !== undefined && timing.attemptStartedAt !== undefined) {
    attributes[GEN_AI.responseTimeToFirstChunk] = (timing.firstTokenAt - timing.attemptStartedAt) / 1000
  }
  if (call.attempts !== undefined) attributes[GATEWAY_GENAI.attempts] = call.attempts
  if (call.costUsd !== undefined) attributes[GATEWAY_GENAI.costUsd] = call.costUsd
  return attributes
}

/** Attributes every metric of the call carries (low cardinality; `error.type` is added to the duration only). */
export const genAiMetricAttributes = (call: GenAiCall): Attributes => {
  const attributes = callee(call, {})
  const responseModel = call.response?.model
  if (responseModel !== undefined && responseModel !== "") attributes[GEN_AI.responseModel] = responseModel
  return attributes
}

/** Seconds from the start of the response to the first content token (docs/reference/gateway-spec.md §6.1.6), for streams that produced one. */
export const timeToFirstTokenOf = (call: GenAiCall): number | undefined => {
  const { timing } = call
  if (!call.stream || timing.firstTokenAt === undefined) return undefined
  const from = timing.responseStartedAt ?? timing.attemptStartedAt
  return from === undefined ? undefined : Math.max(0, timing.firstTokenAt - from) / 1000
}
