/**
 * The live sinks: OTLP gRPC calls to the configured collectors.
 *
 * Details
 * - One channel per collector address (the application trace's and the
 *   GenAI one may be the same collector or two).
 * - GenAI exports carry `authorization: Bearer <token>` gRPC metadata: the
 *   request's platform token when the auth exchange gave one (each token its
 *   own pipeline, so no export call mixes tokens), else `otlp_bearer_token`
 *   if set. The metadata is built once per pipeline.
 * - Every call has a deadline: 10 s for spans, `metrics_export_timeout_secs`
 *   for metrics.
 */
import { Redacted } from "effect"
import { bearerMetadata, METRICS_EXPORT, OtlpGrpcChannel, TRACE_EXPORT } from "../../otlp/grpc.ts"
import type { ExportCredential, TelemetrySettings, TelemetrySinks } from "./settings.ts"

const TRACE_EXPORT_TIMEOUT_MS = 10_000
/** How long the start-up check waits for a collector to take a connection. */
const PROBE_TIMEOUT_MS = 5_000

/** OTLP gRPC exporters to the configured collectors. */
export const otlpSinks = (settings: TelemetrySettings): TelemetrySinks => {
  const { telemetry, genai } = settings
  const channels = new Map<string, OtlpGrpcChannel>()
  const channel = (url: string): OtlpGrpcChannel => {
    let open = channels.get(url)
    if (open === undefined) {
      open = new OtlpGrpcChannel(url)
      channels.set(url, open)
    }
    return open
  }
  const app = telemetry.enabled ? channel(telemetry.otlp_endpoint) : undefined
  const metricsTimeoutMs = genai.metrics_export_timeout_secs * 1000
  const configuredToken = genai.otlp_bearer_token === "" ? undefined : bearerMetadata(genai.otlp_bearer_token)
  return {
    appTraces: (request) =>
      app === undefined ? Promise.reject(new Error("the application trace is off")) : app.send(TRACE_EXPORT, request, undefined, TRACE_EXPORT_TIMEOUT_MS),
    genAi: (credential: ExportCredential | undefined, signal) => {
      const collector = channel(genai.otlp_endpoint)
      const metadata = credential === undefined ? configuredToken : bearerMetadata(Redacted.value(credential.token))
      return signal === "traces"
        ? (request) => collector.send(TRACE_EXPORT, request, metadata, TRACE_EXPORT_TIMEOUT_MS)
        : (request) => collector.send(METRICS_EXPORT, request, metadata, metricsTimeoutMs)
    },
    immediate: false,
    probe: (url) => channel(url).answers(PROBE_TIMEOUT_MS),
    close: () => {
      for (const open of channels.values()) open.close()
      channels.clear()
    }
  }
}
