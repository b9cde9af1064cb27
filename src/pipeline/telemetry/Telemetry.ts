/**
 * Telemetry of the gateway as one service: the application trace
 * (`[telemetry]`) and the GenAI spans and metrics (`[genai_telemetry]`), each
 * with its own providers, resource and collector.
 *
 * - Application trace: every `Effect.withSpan` / `Effect.fn` span of a request
 *   program becomes an OpenTelemetry span through `@effect/opentelemetry`.
 *   The request program runs with `requestContext` (the tracer, or tracing
 *   switched off so spans are no-ops); `serverSpan` wraps it in the server
 *   span, continuing the caller's trace (`parentOf`). Parent-based sampling at
 *   `sample_ratio`, decided as the request starts: an unsampled request runs
 *   with tracing off and creates no span.
 * - GenAI: `recordModelCall` records one span and its metrics per model call,
 *   exported with the request's platform token (or `otlp_bearer_token`).
 *
 * Gotchas
 * - Nothing here can fail or slow a request: exports are batched and bounded,
 *   their failures logged at most once per 10 s (export-errors.ts).
 * - With both sections off nothing is created: no provider, no exporter, no
 *   timer, and spans are no-ops.
 */
import * as OtelResource from "@effect/opentelemetry/Resource"
import { resourceFromAttributes } from "@opentelemetry/resources"
import type { Resource } from "@opentelemetry/resources"
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node"
import { Context, Effect, Layer, Option, References, Tracer } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { ExportErrorLog, installDiagnostics } from "./export-errors.ts"
import type { GenAiCall } from "./genai/call.ts"
import { GenAiRecorder } from "./genai/recorder.ts"
import type { GenAiParent } from "./genai/recorder.ts"
import { Log } from "./log.ts"
import type { TelemetryMemory } from "./memory.ts"
import { otlpSinks } from "./sinks.ts"
import type { ExportCredential, TelemetrySettings, TelemetrySinks } from "./sinks.ts"
import { withServerSpan } from "./spans.ts"
import type { ServerSpanRequest } from "./spans.ts"
import { appSampler, makeAppTracer, parentFromHeaders, sampleRequest, serverErrorStatus } from "./tracer.ts"

export interface TelemetryShape {
  /** `[telemetry] enabled`: request programs are traced. */
  readonly tracing: boolean
  /**
   * What every request program runs with (pass it to the HTTP edge's
   * `Effect.runCallbackWith`): the application tracer, or tracing switched off.
   */
  readonly requestContext: Context.Context<never>
  /** The caller's W3C trace context as a parent span; undefined without one, or when no telemetry is on. */
  readonly parentOf: (headers: IncomingHttpHeaders) => Tracer.ExternalSpan | undefined
  /** Wraps a request program in its server span (the program itself when tracing is off). */
  readonly serverSpan: (request: ServerSpanRequest) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** `[genai_telemetry]`: whether model calls are recorded, and with their content. */
  readonly genAi: { readonly enabled: boolean; readonly captureContent: boolean }
  /**
   * Records one model call: its GenAI span (a child of the current span, or of
   * the caller's trace) and metrics, exported with `credential` (the request's
   * platform token) or the configured bearer token. Never fails.
   */
  readonly recordModelCall: (call: GenAiCall, credential?: ExportCredential | undefined) => Effect.Effect<void>
  /** Exports everything recorded so far (waits at most 5 s). */
  readonly flush: Effect.Effect<void>
}

const SCOPE = "gateway"
const FLUSH_TIMEOUT = "5 seconds"

/**
 * Waits for an export-side promise, bounded, never failing: its failures were
 * already reported by the exporter (export-errors.ts).
 */
const settle = (run: () => Promise<unknown>): Effect.Effect<void> =>
  Effect.promise(() => run().then(() => undefined, () => undefined)).pipe(Effect.timeout(FLUSH_TIMEOUT), Effect.ignore)

const resourceOf = (serviceName: string, environment: string): Resource =>
  resourceFromAttributes(OtelResource.configToAttributes({ serviceName, attributes: { "deployment.environment.name": environment } }))

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

/** The nearest real span of the fiber: no-op spans (tracing off) are skipped to the caller's span. */
const genAiParentOf = (parent: Option.Option<Tracer.AnySpan>): GenAiParent | undefined => {
  let span = Option.getOrUndefined(parent)
  while (span !== undefined && span._tag === "Span" && Context.get(span.annotations, Tracer.DisablePropagation)) {
    span = Option.getOrUndefined(span.parent)
  }
  if (span === undefined || !TRACE_ID.test(span.traceId) || !SPAN_ID.test(span.spanId)) return undefined
  return { traceId: span.traceId, spanId: span.spanId, sampled: span.sampled, remote: span._tag === "ExternalSpan" }
}

const TRACING_OFF = Context.make(References.TracerEnabled, false)
const noParent = (): undefined => undefined
const untraced = () => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => effect

/**
 * The server span of a sampled request; an unsampled one runs with tracing
 * off (its spans are skipped or no-ops), still inside the caller's trace so a
 * GenAI span can join it.
 */
const sampledServerSpan = (ratio: number) => (request: ServerSpanRequest) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const sampled = withServerSpan(request)(effect)
  const unsampled = request.parent === undefined
    ? Effect.withTracerEnabled(effect, false)
    : Effect.withParentSpan(Effect.withTracerEnabled(effect, false), request.parent)
  // Drawn each time the program runs, not when it is built.
  return Effect.suspend(() => (sampleRequest(request.parent, ratio) ? sampled : unsampled))
}

const make = Effect.fnUntraced(function*(settings: TelemetrySettings, sinks: TelemetrySinks, errors: ExportErrorLog) {
  const { telemetry, genai } = settings
  let requestContext = TRACING_OFF
  let appProvider: NodeTracerProvider | undefined
  if (telemetry.enabled) {
    appProvider = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new NodeTracerProvider({
          resource: resourceOf(telemetry.service_name, telemetry.environment),
          sampler: appSampler(telemetry.sample_ratio),
          spanProcessors: [serverErrorStatus(sinks.appSpanProcessor())]
        })
      ),
      (provider) => settle(() => provider.forceFlush().finally(() => provider.shutdown()))
    )
    requestContext = Context.make(Tracer.Tracer, makeAppTracer(appProvider.getTracer(SCOPE)))
  }
  let recorder: GenAiRecorder | undefined
  if (genai.enabled) {
    recorder = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new GenAiRecorder(settings, sinks, resourceOf(genai.service_name, genai.environment), (error) => errors.report("genai record", error))
      ),
      (recorder) => settle(() => recorder.shutdown())
    )
  }
  const genAiRecorder = recorder
  const provider = appProvider
  return {
    tracing: telemetry.enabled,
    requestContext,
    parentOf: telemetry.enabled || genai.enabled ? parentFromHeaders : noParent,
    serverSpan: telemetry.enabled ? sampledServerSpan(telemetry.sample_ratio) : untraced,
    genAi: { enabled: genai.enabled, captureContent: genai.enabled && genai.capture_content },
    recordModelCall: genAiRecorder === undefined
      ? () => Effect.void
      : (call, credential) =>
        Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (parent) =>
          Effect.sync(() => genAiRecorder.record(call, genAiParentOf(parent), credential))),
    flush: settle(() => Promise.all([provider?.forceFlush(), genAiRecorder?.flush()]))
  } satisfies TelemetryShape
})

export class Telemetry extends Context.Service<Telemetry, TelemetryShape>()("gateway/pipeline/telemetry/Telemetry") {
  /**
   * OTLP gRPC exporters to the configured collectors. OpenTelemetry's and
   * grpc-js's own diagnostics go to the log (throttled) while the layer lives.
   */
  static readonly layer = (settings: TelemetrySettings): Layer.Layer<Telemetry, never, Log> =>
    Layer.effect(
      Telemetry,
      Effect.gen(function*() {
        const errors = new ExportErrorLog(yield* Log)
        yield* Effect.acquireRelease(Effect.sync(() => installDiagnostics(errors)), (uninstall) => Effect.sync(uninstall))
        return yield* make(settings, otlpSinks(settings, errors), errors)
      })
    )

  /** Everything in `memory` (spans as they end, metrics when collected); nothing leaves the process. */
  static readonly layerTest = (settings: TelemetrySettings, memory: TelemetryMemory): Layer.Layer<Telemetry, never, Log> =>
    Layer.effect(
      Telemetry,
      Effect.gen(function*() {
        return yield* make(settings, memory, new ExportErrorLog(yield* Log))
      })
    )
}
