/**
 * The application trace of a request: one server span (HTTP semantic
 * conventions) and child spans for model resolution, each upstream attempt,
 * the guardrail scan and the cache lookup. These are plain `Effect.withSpan`
 * wrappers with fixed names and attribute keys, so every stage names things
 * the same way; with `[telemetry]` off they run the effect as it is.
 *
 * docs/operations.md lists every name and attribute.
 */
import { Effect, References } from "effect"
import type { Tracer } from "effect"
import type { ProviderKind } from "../../domain/index.ts"
import { providerNameOf, serverOf } from "./genai/attributes.ts"

export const HTTP = {
  requestMethod: "http.request.method",
  route: "http.route",
  responseStatusCode: "http.response.status_code",
  urlPath: "url.path",
  urlScheme: "url.scheme"
} as const

export const SPAN = {
  resolveModel: "gateway.resolve_model",
  attempt: "gateway.upstream_attempt",
  guardrail: "gateway.guardrail_scan",
  cacheLookup: "gateway.cache_lookup"
} as const

/** Attributes of the application trace beyond the HTTP ones. */
export const ATTR = {
  requestId: "gateway.request_id",
  requestedModel: "gateway.request.model",
  plan: "gateway.plan",
  variant: "gateway.variant",
  attemptNumber: "gateway.attempt.number",
  providerId: "gateway.provider.id",
  providerName: "gen_ai.provider.name",
  targetId: "gateway.target.id",
  upstreamModel: "gateway.upstream.model",
  path: "gateway.path",
  retryDelayMs: "gateway.retry.delay_ms",
  errorType: "error.type",
  upstreamStatus: "gateway.upstream.status_code",
  upstreamErrorBody: "gateway.upstream.error_body",
  serverAddress: "server.address",
  serverPort: "server.port",
  guardrailDirection: "gateway.guardrail.direction",
  guardrailOutcome: "gateway.guardrail.outcome",
  cacheOutcome: "gateway.cache.outcome",
  cacheMode: "gateway.cache.mode"
} as const

/** How much of a withheld upstream body the attempt span keeps. */
export const ERROR_BODY_LIMIT = 4096

const decoder = new TextDecoder()

/**
 * `effect` in the span `name`, with options built only when tracing is on: with
 * it off the effect runs as it is (no no-op span, no attribute object).
 */
const inSpan = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string, options: () => Tracer.SpanOptions): Effect.Effect<A, E, R> =>
  Effect.flatMap(References.TracerEnabled, (enabled) => (enabled ? Effect.withSpan(effect, name, options()) : effect))

/** What the server span says about the request; `status` is read when the program ends. */
export interface ServerSpanRequest {
  readonly method: string
  /** The matched route template (`/v1/chat/completions`, `/v1/files/{file_id}`), never the raw path's ids. */
  readonly route: string
  readonly path: string
  readonly requestId: string
  /** The caller's trace (`Telemetry.parentOf(headers)`), when it sent one. */
  readonly parent?: Tracer.AnySpan | undefined
  readonly status: () => number
}

/** Runs a request program in its server span; the response status is recorded as the program ends. */
export const withServerSpan = (request: ServerSpanRequest) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withSpan(
    Effect.onExit(effect, () =>
      Effect.suspend(() => {
        const status = request.status()
        return Effect.annotateCurrentSpan(status >= 500 ? { [HTTP.responseStatusCode]: status, [ATTR.errorType]: String(status) } : { [HTTP.responseStatusCode]: status })
      })),
    `${request.method} ${request.route}`,
    {
      kind: "server",
      parent: request.parent,
      attributes: {
        [HTTP.requestMethod]: request.method,
        [HTTP.route]: request.route,
        [HTTP.urlPath]: request.path,
        [HTTP.urlScheme]: "http",
        [ATTR.requestId]: request.requestId
      },
      captureStackTrace: false
    }
  ) as Effect.Effect<A, E, R>

/** Model resolution (and the experiment draw). Annotate the outcome with `resolvedAttributes`. */
export const withResolveSpan = (requestedModel: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  inSpan(effect, SPAN.resolveModel, () => ({ attributes: { [ATTR.requestedModel]: requestedModel }, captureStackTrace: false }))

/** What resolution chose, for `Effect.annotateCurrentSpan` inside `withResolveSpan`. */
export const resolvedAttributes = (plan: string, variant?: string): Record<string, string> =>
  variant === undefined ? { [ATTR.plan]: plan } : { [ATTR.plan]: plan, [ATTR.variant]: variant }

export interface AttemptSpanInfo {
  /** 1-based, across the whole request. */
  readonly attempt: number
  readonly providerId: string
  readonly kind: ProviderKind
  readonly origin: string
  readonly targetId: string
  readonly model: string
  readonly path?: "fast" | "normalized" | undefined
  /** How long the engine waited before this attempt (the retry backoff), when it is a retry. */
  readonly retryDelayMs?: number | undefined
}

/** The failure shape attempt spans read (an `UpstreamError`). */
interface AttemptFailure {
  readonly _tag: "UpstreamError"
  readonly reason: string
  readonly upstreamStatus: number
  readonly body?: Uint8Array | undefined
}

/**
 * The attributes an attempt's failure adds: its classification, the upstream
 * status and, for a 5xx whose body the caller did not get (docs/reference/gateway-spec.md §7.3.6), that
 * body's first 4 KB. This span is the one place the body is recorded.
 */
const attemptFailureAttributes = (failure: AttemptFailure): Record<string, string | number> => {
  const attributes: Record<string, string | number> = { [ATTR.errorType]: failure.reason, [ATTR.upstreamStatus]: failure.upstreamStatus }
  if (failure.reason === "upstream" && failure.upstreamStatus >= 500 && failure.body !== undefined && failure.body.byteLength > 0) {
    attributes[ATTR.upstreamErrorBody] = decoder.decode(failure.body.subarray(0, ERROR_BODY_LIMIT))
  }
  return attributes
}

const isAttemptFailure = (error: unknown): error is AttemptFailure =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "UpstreamError"

/**
 * One upstream attempt (kind CLIENT). A failure of the attempt is annotated
 * with `attemptFailureAttributes`; a stream that breaks after its head does
 * not fail the attempt, so annotate it with `Effect.annotateCurrentSpan` there.
 */
export const withAttemptSpan = (info: AttemptSpanInfo) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  inSpan(
    Effect.tapError(effect, (error) => (isAttemptFailure(error) ? Effect.annotateCurrentSpan(attemptFailureAttributes(error)) : Effect.void)),
    SPAN.attempt,
    () => {
      const attributes: Record<string, unknown> = {
        [ATTR.attemptNumber]: info.attempt,
        [ATTR.providerId]: info.providerId,
        [ATTR.providerName]: providerNameOf(info.providerId, info.kind),
        [ATTR.targetId]: info.targetId,
        [ATTR.upstreamModel]: info.model
      }
      const server = serverOf(info.origin)
      if (server !== undefined) {
        attributes[ATTR.serverAddress] = server.address
        attributes[ATTR.serverPort] = server.port
      }
      if (info.path !== undefined) attributes[ATTR.path] = info.path
      if (info.retryDelayMs !== undefined) attributes[ATTR.retryDelayMs] = Math.round(info.retryDelayMs)
      return { kind: "client", attributes, captureStackTrace: false }
    }
  )

/** The input or output guardrail scan. Annotate `ATTR.guardrailOutcome` (`pass`, or the violation's code; never the matched text). */
export const withGuardrailSpan = (direction: "input" | "output") => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  inSpan(effect, SPAN.guardrail, () => ({ attributes: { [ATTR.guardrailDirection]: direction }, captureStackTrace: false }))

/** The response cache lookup. Annotate `ATTR.cacheOutcome` (`hit`, `miss`, `error`, `bypass`). */
export const withCacheLookupSpan = (mode: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  inSpan(effect, SPAN.cacheLookup, () => ({ attributes: { [ATTR.cacheMode]: mode }, captureStackTrace: false }))
