/**
 * The telemetry stage when `[telemetry]` or `[genai_telemetry]` is on: the
 * application trace's tracer and export queue, and the GenAI recorder.
 * Loaded by `Telemetry.layer` only then (a dynamic import), so a gateway
 * with telemetry off never loads gRPC.
 */
import { Context, Effect, Option, Tracer } from "effect"
import type { Scope } from "effect"
import { checkCollectors, collectorStates } from "./collector-check.ts"
import { ExportErrorLog } from "./export-errors.ts"
import { GenAiRecorder } from "./genai/recorder.ts"
import type { GenAiParent } from "./genai/recorder.ts"
import type { JsonLog } from "../../infra/log.ts"
import type { TelemetryMemory } from "./memory.ts"
import { requestHead, resourceAttributes } from "../../otlp/common.ts"
import { ExportQueue } from "../../otlp/queue.ts"
import { exportDelayOf } from "./settings.ts"
import type { TelemetrySettings, TelemetrySinks } from "./settings.ts"
import { otlpSinks } from "./sinks.ts"
import { TELEMETRY_OFF } from "./shape.ts"
import type { TelemetryShape } from "./shape.ts"
import { sampleRequest } from "./sampling.ts"
import { hasValidIds, makeAppTracer, parentFromHeaders, TIMING_OFF, traceStateOf } from "./tracer.ts"

const SCOPE = "gateway"
const FLUSH_TIMEOUT = "5 seconds"
/** The application trace has one queue (GenAI one per token): room for bursts of a few thousand requests. */
const APP_QUEUE = { maxQueued: 8192, maxQueuedBytes: 32 * 1024 * 1024, maxBatch: 512, maxBatchBytes: 3 * 1024 * 1024 }

/**
 * Waits for an export-side promise, bounded, never failing: its failures were
 * already reported (export-errors.ts).
 */
const settle = (run: () => Promise<unknown>): Effect.Effect<void> =>
  Effect.promise(() => run().then(() => undefined, () => undefined)).pipe(Effect.timeout(FLUSH_TIMEOUT), Effect.ignore)

/** The nearest real span of the fiber: no-op spans (tracing off) are skipped to the caller's span. */
const genAiParentOf = (parent: Tracer.AnySpan | undefined): GenAiParent | undefined => {
  let span = parent
  while (span !== undefined && span._tag === "Span" && Context.get(span.annotations, Tracer.DisablePropagation)) {
    span = Option.getOrUndefined(span.parent)
  }
  if (span === undefined) return undefined
  // The gateway's own spans have well-formed ids; a caller's (a library user's parent) may not.
  const remote = span._tag === "ExternalSpan"
  if (remote && !hasValidIds(span)) return undefined
  return { traceId: span.traceId, spanId: span.spanId, sampled: span.sampled, remote, traceState: traceStateOf(span) }
}

const make = Effect.fnUntraced(function*(settings: TelemetrySettings, sinks: TelemetrySinks, errors: ExportErrorLog) {
  const { telemetry, genai } = settings
  yield* Effect.addFinalizer(() => Effect.sync(sinks.close))
  let requestContext = TELEMETRY_OFF.requestContext
  let appQueue: ExportQueue | undefined
  if (telemetry.enabled) {
    appQueue = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new ExportQueue({
          ...APP_QUEUE,
          delayMs: exportDelayOf(settings),
          head: requestHead(resourceAttributes(telemetry.service_name, telemetry.environment), SCOPE),
          send: sinks.appTraces,
          immediate: sinks.immediate,
          onFailure: (error) => errors.report("traces", error)
        })
      ),
      (queue) => settle(() => queue.close())
    )
    requestContext = Context.make(Tracer.Tracer, makeAppTracer(appQueue, telemetry.sample_ratio)).pipe(Context.add(...TIMING_OFF))
  }
  let recorder: GenAiRecorder | undefined
  if (genai.enabled) {
    recorder = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new GenAiRecorder(settings, sinks, resourceAttributes(genai.service_name, genai.environment), (source, error) => errors.report(source, error))
      ),
      (recorder) => settle(() => recorder.shutdown())
    )
  }
  const genAiRecorder = recorder
  const queue = appQueue
  return {
    tracing: telemetry.enabled,
    requestContext,
    parentOf: telemetry.enabled || genai.enabled ? parentFromHeaders : TELEMETRY_OFF.parentOf,
    samples: telemetry.enabled ? (parent) => sampleRequest(parent, telemetry.sample_ratio) : TELEMETRY_OFF.samples,
    genAi: { enabled: genai.enabled, captureContent: genai.enabled && genai.capture_content },
    recordModelCall: genAiRecorder === undefined
      ? TELEMETRY_OFF.recordModelCall
      : (call, credential, callerParent) =>
        Effect.withFiberSucceed((fiber) =>
          genAiRecorder.record(call, genAiParentOf(Context.getOrUndefined(fiber.context, Tracer.ParentSpan) ?? callerParent), credential)
        ),
    flush: settle(() => Promise.all([queue?.flush(), genAiRecorder?.flush()])),
    collectors: sinks.probe === undefined ? TELEMETRY_OFF.collectors : collectorStates(settings, sinks.probe)
  } satisfies TelemetryShape
})

/**
 * OTLP gRPC exporters to the configured collectors (otlp/grpc.ts), their
 * failures logged (throttled). A collector that takes no connection at start
 * is named once (collector-check.ts), in the background.
 */
export const liveTelemetry = (settings: TelemetrySettings, log: JsonLog): Effect.Effect<TelemetryShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const errors = new ExportErrorLog(log)
    const sinks = otlpSinks(settings)
    const telemetry = yield* make(settings, sinks, errors)
    if (sinks.probe !== undefined) yield* Effect.forkScoped(checkCollectors(settings, sinks.probe, log))
    return telemetry
  })

/** Everything in `memory` (spans as they end, metrics when collected); nothing leaves the process. */
export const memoryTelemetry = (settings: TelemetrySettings, memory: TelemetryMemory, log: JsonLog): Effect.Effect<TelemetryShape, never, Scope.Scope> =>
  make(settings, memory, new ExportErrorLog(log))
