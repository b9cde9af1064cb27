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
import { Context, Effect, Layer } from "effect"
import { Log } from "../../infra/log.ts"
import type { TelemetryMemory } from "./memory.ts"
import type { TelemetrySettings } from "./settings.ts"
import { TELEMETRY_OFF } from "./shape.ts"
import type { TelemetryShape } from "./shape.ts"

export type { TelemetryShape }

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
