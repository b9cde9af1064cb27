/**
 * Telemetry of the gateway as one service: the application trace
 * (`[telemetry]`) and the GenAI spans and metrics (`[genai_telemetry]`), each
 * with its own providers, resource and collector.
 *
 * - Application trace: every `Effect.withSpan` / `Effect.useSpan` span of a
 *   traced request program is exported as an OTLP span (tracer.ts). The edge
 *   decides as a request starts whether it is traced (`samples`: the caller's
 *   sampled flag from `parentOf`, else a draw at `sample_ratio`); a traced
 *   request runs with `requestContext` (the tracer) in its server span
 *   (spans.ts `withServerSpan`), an untraced one with tracing off and no span
 *   at all.
 * - GenAI: `recordModelCall` records one span and its metrics per model call,
 *   exported with the request's platform token (or `otlp_bearer_token`), in
 *   the request's trace (its current span, or the caller's).
 *
 * Gotchas
 * - Nothing here can fail or slow a request: exports are batched and bounded,
 *   their failures logged at most once per 10 s per source (export-errors.ts).
 * - With both sections off nothing is created or even loaded: no queue, no
 *   channel, no timer, spans are skipped, and neither the encoder nor gRPC is
 *   imported (live.ts is loaded only when a section is on).
 */
import { Context, Effect, Layer, References } from "effect"
import type { Tracer } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import type { GenAiCall } from "./genai/call.ts"
import { Log } from "../../infra/log.ts"
import type { TelemetryMemory } from "./memory.ts"
import type { ExportCredential, TelemetrySettings } from "./settings.ts"

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
  /** Whether a request with this caller's trace (if any) is traced: tracing on and the request sampled. Drawn anew each call. */
  readonly samples: (parent: Tracer.AnySpan | undefined) => boolean
  /** `[genai_telemetry]`: whether model calls are recorded, and with their content. */
  readonly genAi: { readonly enabled: boolean; readonly captureContent: boolean }
  /**
   * Records one model call: its GenAI span (a child of the current span, else
   * of `callerParent`, the caller's trace) and metrics, exported with
   * `credential` (the request's platform token) or the configured bearer
   * token. Never fails.
   */
  readonly recordModelCall: (call: GenAiCall, credential?: ExportCredential | undefined, callerParent?: Tracer.AnySpan | undefined) => Effect.Effect<void>
  /** Exports everything recorded so far (waits at most 5 s). */
  readonly flush: Effect.Effect<void>
}

/** Both sections off: no spans, no records, nothing loaded. A section that is off in live.ts takes its part from here. */
export const TELEMETRY_OFF: TelemetryShape = {
  tracing: false,
  /** What request programs run with when nothing is traced. */
  requestContext: Context.make(References.TracerEnabled, false),
  parentOf: () => undefined,
  samples: () => false,
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
