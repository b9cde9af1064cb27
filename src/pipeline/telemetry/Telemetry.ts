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
 * - With both sections off nothing is created or even loaded: no provider, no
 *   exporter, no timer, spans are skipped, and OpenTelemetry's modules are
 *   never imported (live.ts is loaded only when a section is on).
 */
import { Context, Effect, Layer, References } from "effect"
import type { Tracer } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import type { GenAiCall } from "./genai/call.ts"
import { Log } from "./log.ts"
import type { TelemetryMemory } from "./memory.ts"
import type { ExportCredential, TelemetrySettings } from "./settings.ts"
import type { ServerSpanRequest } from "./spans.ts"

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
  /**
   * Wraps a request program in its server span; with GenAI telemetry alone, in
   * the caller's trace (so its GenAI spans join it); the program itself when
   * both are off.
   */
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

/** Both sections off: no spans, no records, nothing loaded. A section that is off in live.ts takes its part from here. */
export const TELEMETRY_OFF: TelemetryShape = {
  tracing: false,
  /** What request programs run with when nothing is traced. */
  requestContext: Context.make(References.TracerEnabled, false),
  parentOf: () => undefined,
  serverSpan: () => (effect) => effect,
  genAi: { enabled: false, captureContent: false },
  recordModelCall: () => Effect.void,
  flush: Effect.void
}

const isOn = (settings: TelemetrySettings): boolean => settings.telemetry.enabled || settings.genai.enabled

export class Telemetry extends Context.Service<Telemetry, TelemetryShape>()("gateway/pipeline/telemetry/Telemetry") {
  /** OTLP gRPC exporters to the configured collectors (live.ts, loaded only when a section is on). */
  static readonly layer = (settings: TelemetrySettings): Layer.Layer<Telemetry, never, Log> =>
    isOn(settings)
      ? Layer.effect(
        Telemetry,
        Effect.gen(function*() {
          const log = yield* Log
          const live = yield* Effect.promise(() => import("./live.ts"))
          return yield* live.liveTelemetry(settings, log)
        })
      )
      : Layer.succeed(Telemetry, TELEMETRY_OFF)

  /** Everything in `memory` (spans as they end, metrics when collected); nothing leaves the process. */
  static readonly layerTest = (settings: TelemetrySettings, memory: TelemetryMemory): Layer.Layer<Telemetry, never, Log> =>
    Layer.effect(
      Telemetry,
      Effect.gen(function*() {
        const log = yield* Log
        const live = yield* Effect.promise(() => import("./live.ts"))
        return yield* live.memoryTelemetry(settings, memory, log)
      })
    )
}
