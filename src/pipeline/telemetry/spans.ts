/**
 * The application trace of a request: one server span (HTTP semantic
 * conventions) and child spans for model resolution, each upstream attempt,
 * the guardrail scan and the cache lookup, with fixed names and attribute keys,
 * so every stage names things the same way.
 *
 * Details
 * - The server span is an `Effect.useSpan`: it is the parent of everything
 *   the request does. The child spans are leaves (`inLeafSpan`): nothing
 *   runs inside them that makes spans of its own, so they do not become the
 *   fiber's current span, which spares a context switch per span. They hand
 *   their span to the wrapped program, which annotates it directly.
 * - Run them only in a traced request (the edge decides, `RequestContext.traced`):
 *   with tracing off they would make no-op spans for nothing.
 *
 * docs/operations.md lists every name and attribute.
 */
import { Context, Effect, Exit, LogLevel, Option, References, Tracer } from "effect"
import type { Cause } from "effect"
import { onExitInPlace } from "../../domain/index.ts"
import type { ProviderKind } from "../../domain/index.ts"
import { providerNameOf, serverOf } from "./genai/attributes.ts"
import { ATTR, HTTP, SPAN } from "./names.ts"
import { isExportedSpan } from "./tracer.ts"


/** How much of a withheld upstream body the attempt span keeps. */
export const ERROR_BODY_LIMIT = 4096

const decoder = new TextDecoder()

/** A program that annotates the span it runs in. */
type InSpan<A, E, R> = (span: Tracer.Span) => Effect.Effect<A, E, R>

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

const SERVER_SPAN = { kind: "server" } as const satisfies Tracer.SpanOptionsNoTrace

/** Server span names (`POST /v1/chat/completions`) by route and method: made once per route, not per request. */
const serverSpanNames = new Map<string, Map<string, string>>()

const serverSpanName = (method: string, route: string): string => {
  let byMethod = serverSpanNames.get(route)
  if (byMethod === undefined) {
    // Routes are the router's templates: few, but bound the map anyway.
    if (serverSpanNames.size >= 1024) serverSpanNames.clear()
    byMethod = new Map()
    serverSpanNames.set(route, byMethod)
  }
  let name = byMethod.get(method)
  if (name === undefined) {
    name = `${method} ${route}`
    if (byMethod.size < 64) byMethod.set(method, name)
  }
  return name
}

/** What a server span says of its request as it starts (`withServerSpan` and `startServerSpan` alike). */
const annotateServerSpan = (span: Tracer.Span, request: ServerSpanStart): void => {
  span.attribute(HTTP.requestMethod, request.method)
  span.attribute(HTTP.route, request.route)
  span.attribute(HTTP.urlPath, request.path)
  span.attribute(HTTP.urlScheme, "http")
  span.attribute(ATTR.requestId, request.requestId)
}

/** The status answered, and an error type for a 5xx. */
const annotateStatus = (span: Tracer.Span, status: number): void => {
  span.attribute(HTTP.responseStatusCode, status)
  if (status >= 500) span.attribute(ATTR.errorType, String(status))
}

/**
 * Runs a request program in its server span (the parent of all its spans); the response status is recorded as the program ends.
 * Attributes are set on the span rather than passed as an object: a literal with computed keys is slow to build on every request.
 */
export const withServerSpan = (request: ServerSpanRequest) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.useSpan(serverSpanName(request.method, request.route), request.parent === undefined ? SERVER_SPAN : { kind: "server", parent: request.parent }, (span) => {
    annotateServerSpan(span, request)
    // The parent of every span the program makes. Not `Effect.withParentSpan`: that also pushes a stack
    // frame named after the span (a second context change and fiber cache per request, for a name in
    // the stack traces of failures the edge answers anyway).
    return Effect.provideService(
      Effect.onExit(effect, () =>
        Effect.sync(() => annotateStatus(span, request.status()))),
      Tracer.ParentSpan,
      span
    )
  }) as Effect.Effect<A, E, R>

const NO_ANNOTATIONS = Context.empty()

/** What the server span of a request run at the edge says as it starts. */
export type ServerSpanStart = Omit<ServerSpanRequest, "status">

/**
 * The server span of a request whose fiber the edge starts itself (server.ts):
 * made by the request's tracer as `withServerSpan` makes it, the parent of the
 * request's program through the context the fiber starts with
 * (`Tracer.ParentSpan`), and ended by `endServerSpan` with the fiber's exit.
 * No program wraps the request: no span machinery of Effect's, no context
 * change or exit hook inside it (stage alone: 1.5 µs and 1.8 KB less per
 * traced request, bench/README.md "Telemetry").
 */
export const startServerSpan = (tracer: Tracer.Tracer, request: ServerSpanStart): Tracer.Span => {
  const span = tracer.span({
    name: serverSpanName(request.method, request.route),
    parent: request.parent === undefined ? Option.none() : Option.some(request.parent),
    annotations: NO_ANNOTATIONS,
    links: [],
    startTime: 0n,
    kind: "server",
    root: false,
    sampled: true
  })
  annotateServerSpan(span, request)
  return span
}

/** Ends a `startServerSpan` span with the status answered and the request fiber's exit. */
export const endServerSpan = (span: Tracer.Span, status: number, exit: Exit.Exit<unknown, unknown>): void => {
  annotateStatus(span, status)
  span.end(0n, exit)
}

/**
 * A leaf span around the program `evaluate` makes: the span `Effect.useSpan`
 * would make (the fiber's tracer, its current span as the parent), ended with
 * the program's exit after `onEnd` has seen it. In a traced request (the
 * current span is one the application trace exports, span timing off, no span
 * annotations or links from the environment, no trace level that drops it)
 * the span is made directly and ended by one exit hook: Effect's span
 * machinery reads a dozen references and allocates some 2.5 KB per span, this
 * about half (bench/README.md, "Telemetry"). Anywhere else, `Effect.useSpan`.
 */
const inLeafSpan = <A, E, R>(
  name: string,
  kind: Tracer.SpanKind,
  evaluate: InSpan<A, E, R>,
  onEnd?: (span: Tracer.Span, exit: Exit.Exit<A, E>) => void
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const { cache } = fiber
    const parent = cache.span
    if (
      cache.tracer === undefined || !cache.tracerEnabled || parent === undefined || !isExportedSpan(parent) ||
      fiber.getRef(References.TracerTimingEnabled) || fiber.getRef(References.TracerSpanLinks).length > 0 ||
      !emptyRecord(fiber.getRef(References.TracerSpanAnnotations)) ||
      LogLevel.isGreaterThan(fiber.getRef(Tracer.MinimumTraceLevel), fiber.getRef(Tracer.CurrentTraceLevel))
    ) {
      return onEnd === undefined
        ? Effect.useSpan(name, { kind }, evaluate)
        : Effect.useSpan(name, { kind }, (span) => Effect.onExit(evaluate(span), (exit) => Effect.sync(() => onEnd(span, exit))))
    }
    const span = cache.tracer.span({ name, parent: Option.some(parent), annotations: NO_ANNOTATIONS, links: [], startTime: 0n, kind, root: false, sampled: true })
    return onExitInPlace(evaluate(span), (exit) => {
      onEnd?.(span, exit)
      span.end(0n, exit)
      return undefined
    })
  })

const emptyRecord = (record: Readonly<Record<string, unknown>>): boolean => {
  for (const _ in record) return false
  return true
}

/** Model resolution (and the experiment draw). Annotate the outcome with `annotateResolved`. */
export const inResolveSpan = <A, E, R>(requestedModel: string, effect: InSpan<A, E, R>): Effect.Effect<A, E, R> =>
  inLeafSpan(SPAN.resolveModel, "internal", (span) => {
    span.attribute(ATTR.requestedModel, requestedModel)
    return effect(span)
  })

/** What resolution chose, on the resolve span. */
export const annotateResolved = (span: Tracer.Span, plan: string, variant?: string): void => {
  span.attribute(ATTR.plan, plan)
  if (variant !== undefined) span.attribute(ATTR.variant, variant)
}

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
  /** In a hedged race (`hedge_after_ms`): the attempt that may be hedged, or the hedge started beside it. */
  readonly hedge?: "primary" | "hedge" | undefined
}

/** The failure shape attempt spans read (an `UpstreamError`). */
interface AttemptFailure {
  readonly _tag: "UpstreamError"
  readonly reason: string
  readonly upstreamStatus: number
  readonly body?: Uint8Array | undefined
}

/**
 * The body of a 5xx the caller did not get (docs/reference/gateway-spec.md
 * §7.3.6), its first 4 KB, for the attempt span: the one place it is recorded.
 */
const withheldBody = (failure: AttemptFailure): string | undefined =>
  failure.reason === "upstream" && failure.upstreamStatus >= 500 && failure.body !== undefined && failure.body.byteLength > 0
    ? decoder.decode(failure.body.subarray(0, ERROR_BODY_LIMIT))
    : undefined

const isAttemptFailure = (error: unknown): error is AttemptFailure =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "UpstreamError"

/**
 * One upstream attempt (kind CLIENT). A failure of the attempt is annotated
 * with its classification, the upstream status and the withheld 5xx body
 * (`withheldBody`); a stream that breaks after its head does not fail the
 * attempt, so the program annotates its span there.
 */
export const inAttemptSpan = <A, E, R>(
  info: AttemptSpanInfo,
  effect: InSpan<A, E, R>,
  /** Called as the attempt ends, before its span does (one exit hook for both, not two). */
  onEnd?: (span: Tracer.Span, exit: Exit.Exit<A, E>) => void
): Effect.Effect<A, E, R> =>
  inLeafSpan(SPAN.attempt, "client", (span) => {
    span.attribute(ATTR.attemptNumber, info.attempt)
    span.attribute(ATTR.providerId, info.providerId)
    span.attribute(ATTR.providerName, providerNameOf(info.providerId, info.kind))
    span.attribute(ATTR.targetId, info.targetId)
    span.attribute(ATTR.upstreamModel, info.model)
    const server = serverOf(info.origin)
    if (server !== undefined) {
      span.attribute(ATTR.serverAddress, server.address)
      span.attribute(ATTR.serverPort, server.port)
    }
    if (info.path !== undefined) span.attribute(ATTR.path, info.path)
    if (info.retryDelayMs !== undefined) span.attribute(ATTR.retryDelayMs, Math.round(info.retryDelayMs))
    if (info.hedge !== undefined) span.attribute(ATTR.hedge, info.hedge)
    return effect(span)
  }, (span, exit) => {
    if (Exit.isFailure(exit)) annotateFailure(span, exit.cause)
    onEnd?.(span, exit)
  })

/** The attempt's failure (its first typed error, as `Effect.tapError` sees it) on its span. */
const annotateFailure = (span: Tracer.Span, cause: Cause.Cause<unknown>): void => {
  const failure = cause.reasons.find((reason) => reason._tag === "Fail")
  const error = failure?._tag === "Fail" ? failure.error : undefined
  if (!isAttemptFailure(error)) return
  span.attribute(ATTR.errorType, error.reason)
  span.attribute(ATTR.upstreamStatus, error.upstreamStatus)
  const body = withheldBody(error)
  if (body !== undefined) span.attribute(ATTR.upstreamErrorBody, body)
}

/** The input or output guardrail scan. Annotate `ATTR.guardrailOutcome` (`pass`, or the violation's code; never the matched text). */
export const inGuardrailSpan = <A, E, R>(direction: "input" | "output", effect: InSpan<A, E, R>): Effect.Effect<A, E, R> =>
  inLeafSpan(SPAN.guardrail, "internal", (span) => {
    span.attribute(ATTR.guardrailDirection, direction)
    return effect(span)
  })

/** The response cache lookup. Annotate `ATTR.cacheOutcome` (`hit`, `miss`, `error`, `bypass`). */
export const inCacheLookupSpan = <A, E, R>(mode: string, effect: InSpan<A, E, R>): Effect.Effect<A, E, R> =>
  inLeafSpan(SPAN.cacheLookup, "internal", (span) => {
    span.attribute(ATTR.cacheMode, mode)
    return effect(span)
  })
