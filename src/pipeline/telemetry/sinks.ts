/**
 * Where telemetry goes: the span processors and metric readers the
 * `Telemetry` service plugs into its providers. The live sinks export over
 * OTLP gRPC; the test sinks (memory.ts) keep everything in memory.
 *
 * Details
 * - Batching everywhere (bounded queues: 8192 application spans, 2048 per
 *   GenAI token; batches of 512, flushed every second) and an export timeout
 *   on every call: a collector that is down or slow fills a queue that then
 *   drops, it never holds a request.
 * - GenAI exports carry `authorization: Bearer <token>` gRPC metadata: the
 *   request's platform token when the auth exchange gave one (one exporter per
 *   token, so no export call mixes tokens), else `otlp_bearer_token` if set.
 */
import { Metadata } from "@grpc/grpc-js"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Redacted } from "effect"
import { reportingMetricExporter, reportingSpanExporter } from "./export-errors.ts"
import type { ExportErrorLog } from "./export-errors.ts"
import type { ExportCredential, TelemetrySettings, TelemetrySinks } from "./settings.ts"

const BATCH = { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 1000, exportTimeoutMillis: 10_000 }
/** The application trace has one queue (GenAI up to one per token): room for bursts of a few thousand requests. */
const APP_BATCH = { ...BATCH, maxQueueSize: 8192 }
const TRACE_EXPORT_TIMEOUT_MS = 10_000

const bearer = (token: string): Metadata => {
  const metadata = new Metadata()
  metadata.set("authorization", `Bearer ${token}`)
  return metadata
}

/** OTLP gRPC exporters to the configured collectors. */
export const otlpSinks = (settings: TelemetrySettings, errors: ExportErrorLog): TelemetrySinks => {
  const { telemetry, genai } = settings
  const metadataFor = (credential: ExportCredential | undefined): Metadata | undefined => {
    if (credential !== undefined) return bearer(Redacted.value(credential.token))
    return genai.otlp_bearer_token === "" ? undefined : bearer(genai.otlp_bearer_token)
  }
  /** An exporter's options for the GenAI collector, exporting with `credential`. */
  const genAiExporterConfig = (credential: ExportCredential | undefined, timeoutMillis: number) => {
    const metadata = metadataFor(credential)
    return { url: genai.otlp_endpoint, timeoutMillis, ...(metadata === undefined ? {} : { metadata }) }
  }
  const intervalMs = genai.metrics_export_interval_secs * 1000
  // The SDK refuses a timeout longer than the interval; config checks reject it, this keeps the reader constructible.
  const timeoutMs = Math.min(genai.metrics_export_timeout_secs * 1000, intervalMs)
  return {
    appSpanProcessor: () =>
      new BatchSpanProcessor(
        reportingSpanExporter(new OTLPTraceExporter({ url: telemetry.otlp_endpoint, timeoutMillis: TRACE_EXPORT_TIMEOUT_MS }), "traces", errors),
        APP_BATCH
      ),
    genAiSpanProcessor: (credential) =>
      new BatchSpanProcessor(
        reportingSpanExporter(new OTLPTraceExporter(genAiExporterConfig(credential, TRACE_EXPORT_TIMEOUT_MS)), "genai traces", errors),
        BATCH
      ),
    genAiMetricReader: (credential) => {
      const exporter = new OTLPMetricExporter(genAiExporterConfig(credential, timeoutMs))
      return new PeriodicExportingMetricReader({
        exporter: reportingMetricExporter(exporter, "genai metrics", errors),
        exportIntervalMillis: intervalMs,
        exportTimeoutMillis: timeoutMs
      })
    }
  }
}
