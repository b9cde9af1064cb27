/**
 * Shared pieces of the telemetry tests: settings from a configuration
 * document, a live `Telemetry` run in its own scope, and a request-shaped
 * program (a server span with the gateway's child spans).
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { GatewayConfig } from "../../../src/config/index.ts"
import { Log } from "../../../src/infra/log.ts"
import { telemetrySettingsOf } from "../../../src/pipeline/telemetry/settings.ts"
import type { TelemetrySettings } from "../../../src/pipeline/telemetry/settings.ts"
import { Telemetry } from "../../../src/pipeline/telemetry/Telemetry.ts"
import type { TelemetryShape } from "../../../src/pipeline/telemetry/Telemetry.ts"
import type { TelemetryMemory } from "../../../src/pipeline/telemetry/memory.ts"
import { inAttemptSpan, inCacheLookupSpan, inGuardrailSpan, inResolveSpan, withServerSpan } from "../../../src/pipeline/telemetry/spans.ts"

/** The telemetry sections of a configuration document, validated like the file. */
export const settingsOf = (sections: { readonly telemetry?: object; readonly genai_telemetry?: object }, env: Record<string, string> = {}): TelemetrySettings =>
  telemetrySettingsOf(GatewayConfig.fromDocument({ server: {}, ...sections }, env).file)

export interface RunningTelemetry {
  readonly telemetry: TelemetryShape
  readonly logs: Array<Record<string, unknown>>
  /** Runs an effect the way the HTTP edge runs a request program: with the telemetry's request context. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  /** Releases the layer (flushes and shuts the providers down). */
  readonly close: () => Promise<void>
}

export const startTelemetry = async (settings: TelemetrySettings, memory?: TelemetryMemory): Promise<RunningTelemetry> => {
  const logs: Array<Record<string, unknown>> = []
  const layer = (memory === undefined ? Telemetry.layer(settings) : Telemetry.layerTest(settings, memory)).pipe(Layer.provide(Log.layerTest(logs)))
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const telemetry = Context.get(context, Telemetry)
  return {
    telemetry,
    logs,
    run: (effect) => Effect.runPromiseWith(telemetry.requestContext)(effect),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const ORIGIN = "https://api.openai.test:8443"

/**
 * Runs `steps` as the HTTP edge runs a request program: when the telemetry
 * samples the request (the caller's `traceparent` among `headers` decides, or
 * a draw), traced in its server span; otherwise with tracing off.
 */
export const asRequest = <A, E, R>(telemetry: TelemetryShape, steps: Effect.Effect<A, E, R>, headers: Record<string, string> = {}, status = 200): Effect.Effect<A, E, R> => {
  const parent = telemetry.parentOf(headers)
  if (!telemetry.samples(parent)) return Effect.withTracerEnabled(steps, false)
  return withServerSpan({ method: "POST", route: "/v1/chat/completions", path: "/v1/chat/completions", requestId: "req-1", parent, status: () => status })(steps)
}

/** A request program as the pipeline shapes it: resolution, guardrail, cache lookup, one attempt. */
export const requestProgram = (telemetry: TelemetryShape, headers: Record<string, string> = {}, status = 200) =>
  asRequest(
    telemetry,
    Effect.gen(function*() {
      yield* inResolveSpan("gpt-4o", () => Effect.void)
      yield* inGuardrailSpan("input", () => Effect.void)
      yield* inCacheLookupSpan("auto", () => Effect.void)
      yield* inAttemptSpan({ attempt: 1, providerId: "openai", kind: "openai", origin: ORIGIN, targetId: "openai::gpt-4o", model: "gpt-4o", path: "fast" }, () => Effect.void)
    }),
    headers,
    status
  )
