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
}

export interface GenAiSpanData {
  readonly name: string
  readonly attributes: Attributes
  /** Attributes every metric of the call carries (low cardinality; `error.type` is added to the duration only). */
  readonly metricAttributes: Attributes
}

const planAttributes = (plan: string | undefined, attributes: Attributes): void => {
  if (plan === undefined) return
  if (plan.startsWith("route::")) attributes[GATEWAY_GENAI.route] = plan.slice(7)
  else if (plan.startsWith("function::")) attributes[GATEWAY_GENAI.function] = plan.slice(10)
}

/** The span and metric attributes of a call. */
export const genAiSpanData = (call: GenAiCall, captureContent: boolean): GenAiSpanData => {
  const metric: Attributes = {
    [GEN_AI.operationName]: call.operation,
    [GEN_AI.providerName]: providerNameOf(call.upstream.providerId, call.upstream.kind),
    [GEN_AI.requestModel]: call.upstream.model
  }
  const server = serverOf(call.upstream.origin)
  if (server !== undefined) {
    metric[SERVER_ADDRESS] = server.address
    metric[SERVER_PORT] = server.port
  }
  const responseModel = call.response?.model
  if (responseModel !== undefined && responseModel !== "") metric[GEN_AI.responseModel] = responseModel
  const attributes: Attributes = { ...metric }
  if (call.error !== undefined) attributes[ERROR_TYPE] = call.error
  if (call.request !== undefined) Object.assign(attributes, chatRequestAttributes(call.request, captureContent))
  if (call.requestAttributes !== undefined) Object.assign(attributes, call.requestAttributes)
  Object.assign(attributes, responseAttributes(call.response, { captureContent, failed: call.error !== undefined }))
  if (call.operation === "embeddings") delete attributes[GEN_AI.usageOutputTokens]
  const { timing } = call
  if (call.stream && timing.firstTokenAt !== undefined && timing.attemptStartedAt !== undefined) {
    attributes[GEN_AI.responseTimeToFirstChunk] = (timing.firstTokenAt - timing.attemptStartedAt) / 1000
  }
  attributes[GATEWAY_GENAI.requestedModel] = call.requestedModel
  attributes[GATEWAY_GENAI.providerId] = call.upstream.providerId
  planAttributes(call.plan, attributes)
  if (call.variant !== undefined) attributes[GATEWAY_GENAI.variant] = call.variant
  if (call.attempts !== undefined) attributes[GATEWAY_GENAI.attempts] = call.attempts
  if (call.path !== undefined) attributes[GATEWAY_GENAI.path] = call.path
  if (call.projectId !== undefined) attributes[GATEWAY_GENAI.projectId] = call.projectId
  return { name: `${call.operation} ${call.upstream.model}`, attributes, metricAttributes: metric }
}

/** Seconds from the start of the response to the first content token (docs/reference/gateway-spec.md §6.1.6), for streams that produced one. */
export const timeToFirstTokenOf = (call: GenAiCall): number | undefined => {
  const { timing } = call
  if (!call.stream || timing.firstTokenAt === undefined) return undefined
  const from = timing.responseStartedAt ?? timing.attemptStartedAt
  return from === undefined ? undefined : Math.max(0, timing.firstTokenAt - from) / 1000
}
