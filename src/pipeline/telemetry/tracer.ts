/**
 * The application trace's plumbing: the Effect `Tracer` that turns every
 * `Effect.withSpan` / `Effect.fn` span into an OpenTelemetry span (the
 * `@effect/opentelemetry` bridge), the caller's W3C trace context as a parent,
 * and what the exported spans must never carry.
 *
 * Details
 * - The bridge's per-operation context hook is left out: it re-activates the
 *   OpenTelemetry context around every Effect operation so that libraries
 *   instrumented by OpenTelemetry itself see the current span. The gateway has
 *   none, no context manager is registered, and the hook cost two context
 *   copies per operation on the hot path.
 * - Failures are redacted before a span records them: an `UpstreamError`
 *   carries the upstream's own message (for a 5xx, text the caller never
 *   sees, docs/reference/gateway-spec.md §7.3.6), and every span the failure passes through would
 *   otherwise copy it into an exception event. The attempt span records the
 *   withheld body explicitly (spans.ts); no other span does.
 * - A server span whose response is a 5xx gets status ERROR (HTTP semantic
 *   conventions), although its program succeeded (it wrote the error).
 * - Children of an unsampled span are plain in-memory spans (same trace id,
 *   never exported): at the default ratio 0.1, nine requests in ten create one
 *   OpenTelemetry span (the sampler's decision) instead of one per span.
 */
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { createTraceState, SpanKind, SpanStatusCode } from "@opentelemetry/api"
import type { Context as OtelContext } from "@opentelemetry/api"
import { parseTraceParent } from "@opentelemetry/core"
import { ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan, Sampler, SamplingResult, Span as SdkSpan, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Cause, Effect, Exit, Tracer } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { HTTP } from "./spans.ts"

/** An upstream failure as spans may show it: the class, the provider, the status; never the upstream's text. */
class RedactedUpstreamFailure extends Error {
  constructor(error: { readonly reason: string; readonly provider: string; readonly upstreamStatus: number; readonly timedOut: boolean }) {
    const what = error.timedOut ? "timed out" : error.upstreamStatus === 0 ? "was unreachable" : `returned status ${error.upstreamStatus}`
    super(`${error.reason}: provider ${error.provider} ${what}`)
    this.name = "UpstreamError"
    this.stack = `${this.name}: ${this.message}`
  }
}

const isUpstreamError = (error: unknown): error is ConstructorParameters<typeof RedactedUpstreamFailure>[0] =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "UpstreamError"

const redact = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<unknown, unknown> =>
  Exit.isSuccess(exit) ? exit : Exit.failCause(Cause.map(exit.cause, (error) => (isUpstreamError(error) ? new RedactedUpstreamFailure(error) : error)))

/** The Effect tracer of the application trace, backed by an OpenTelemetry tracer. */
export const makeAppTracer = (otelTracer: OtelTracer.OtelTracer["Service"]): Tracer.Tracer => {
  const bridge = Effect.runSync(Effect.provideService(OtelTracer.make, OtelTracer.OtelTracer, otelTracer))
  return Tracer.make({
    span(options) {
      // Inside a trace the sampler dropped (a child of an unsampled span, or of a caller's
      // unsampled traceparent), nothing will be exported: an in-memory span keeps the ids
      // and costs a fraction of a non-recording OpenTelemetry span. Roots always ask the sampler.
      if (!options.sampled && options.parent._tag === "Some") return new Tracer.NativeSpan(options)
      const span = bridge.span(options)
      const end = span.end
      span.end = (endTime, exit) => end.call(span, endTime, redact(exit))
      return span
    }
  })
}

/**
 * The caller's trace (W3C `traceparent` and `tracestate`) as the parent of the
 * request's server span: the trace continues, and the parent's sampled flag
 * decides sampling. Undefined when the header is absent or malformed.
 */
export const parentFromHeaders = (headers: IncomingHttpHeaders): Tracer.ExternalSpan | undefined => {
  const header = headers.traceparent
  if (header === undefined) return undefined
  const context = parseTraceParent(Array.isArray(header) ? header[0] : header)
  if (context === null) return undefined
  const state = headers.tracestate
  let traceState: ReturnType<typeof createTraceState> | undefined
  if (state !== undefined) {
    try {
      traceState = createTraceState(Array.isArray(state) ? state.join(",") : state)
    } catch {
      traceState = undefined
    }
  }
  return OtelTracer.makeExternalSpan({ traceId: context.traceId, spanId: context.spanId, traceFlags: context.traceFlags, traceState })
}

/**
 * Whether a request's trace is recorded, decided before its server span
 * starts (so an unsampled request creates no span at all): the caller's
 * sampled flag when it sent a trace context, else a draw at `ratio`.
 */
export const sampleRequest = (parent: Tracer.AnySpan | undefined, ratio: number): boolean =>
  parent !== undefined ? parent.sampled : ratio >= 1 || (ratio > 0 && Math.random() < ratio)

/**
 * Roots that are server spans were drawn by `sampleRequest` already and are
 * recorded; any other root is drawn at `ratio` on its trace id. Children
 * follow their parent (local or the caller's).
 */
class RequestRootSampler implements Sampler {
  private readonly ratio: TraceIdRatioBasedSampler
  constructor(ratio: number) {
    this.ratio = new TraceIdRatioBasedSampler(ratio)
  }
  shouldSample(context: OtelContext, traceId: string, _name: string, kind: SpanKind): SamplingResult {
    return kind === SpanKind.SERVER ? { decision: SamplingDecision.RECORD_AND_SAMPLED } : this.ratio.shouldSample(context, traceId)
  }
  toString(): string {
    return `RequestRootSampler{${this.ratio.toString()}}`
  }
}

/** The application trace's sampler: parent-based, with request roots drawn by `sampleRequest`. */
export const appSampler = (ratio: number): Sampler => new ParentBasedSampler({ root: new RequestRootSampler(ratio) })

/**
 * Marks server spans of 5xx responses as errors, then hands every span to
 * `inner`. (The bridge sets status OK on every span whose program succeeded;
 * the request program succeeds when it has written an error response.)
 */
export const serverErrorStatus = (inner: SpanProcessor): SpanProcessor => ({
  onStart: (span: SdkSpan, context: OtelContext) => inner.onStart(span, context),
  onEnding: (span: SdkSpan) => {
    if (span.kind === SpanKind.SERVER) {
      const status = span.attributes[HTTP.responseStatusCode]
      // `setStatus` cannot turn OK into ERROR; the span is still writable here, before it is exported.
      if (typeof status === "number" && status >= 500) (span as { status: SdkSpan["status"] }).status = { code: SpanStatusCode.ERROR }
    }
    inner.onEnding?.(span)
  },
  onEnd: (span: ReadableSpan) => inner.onEnd(span),
  forceFlush: () => inner.forceFlush(),
  shutdown: () => inner.shutdown()
})
