/**
 * The telemetry stage's settings and the contracts between its parts: which
 * sections are on, the credential a GenAI export goes out with, and the sinks
 * the providers write to. Types only (and one pure function): the server
 * imports this whatever is enabled, so nothing here loads OpenTelemetry.
 */
import type { MetricReader } from "@opentelemetry/sdk-metrics"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { Redacted } from "effect"
import type { ConfigFile } from "../../config/index.ts"

export interface TelemetrySettings {
  readonly telemetry: ConfigFile["telemetry"]
  readonly genai: ConfigFile["genai_telemetry"]
}

/** The telemetry sections of a validated configuration. */
export const telemetrySettingsOf = (file: ConfigFile): TelemetrySettings => ({ telemetry: file.telemetry, genai: file.genai_telemetry })

/**
 * The credential a request's GenAI telemetry is exported with (the platform
 * token from the auth exchange). `fingerprint` names it in maps and memory
 * without holding the token as a key; `expiresAt` (epoch ms) lets its
 * exporter be flushed and closed while the token is still valid.
 */
export interface ExportCredential {
  readonly token: Redacted.Redacted<string>
  readonly fingerprint: string
  readonly expiresAt?: number | undefined
}

export interface TelemetrySinks {
  /** The application trace's span processor (asked once, when `[telemetry]` is enabled). */
  readonly appSpanProcessor: () => SpanProcessor
  /** A GenAI span processor for one credential (`undefined`: the configured `otlp_bearer_token`). */
  readonly genAiSpanProcessor: (credential: ExportCredential | undefined) => SpanProcessor
  /** A GenAI metric reader for one credential (asked only when metrics are enabled). */
  readonly genAiMetricReader: (credential: ExportCredential | undefined) => MetricReader
}
