/**
 * What the `Telemetry` service offers, and the service with both sections
 * off. Its own module so that Telemetry.ts (the tag, which loads live.ts
 * only when a section is on) and live.ts (which takes an off section's part
 * from `TELEMETRY_OFF`) both import it instead of each other.
 */
import { Context, Effect, References } from "effect"
import type { Tracer } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import type { GenAiCall } from "./genai/call.ts"
import type { ExportCredential } from "./settings.ts"

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
  /** The collectors the sections that are on send to, and whether each takes a connection now (`/status`, `/metrics`). */
  readonly collectors: Effect.Effect<ReadonlyArray<CollectorState>>
}

/** A collector and whether it answers. */
export interface CollectorState {
  /** Scheme, host and port only. */
  readonly endpoint: string
  readonly reachable: boolean
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
  flush: Effect.void,
  collectors: Effect.succeed([])
}
