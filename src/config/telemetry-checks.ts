/**
 * Rules of the `[telemetry]`, `[genai_telemetry]` and `[auth]` sections that
 * one field's schema cannot say: endpoints the exporters and the exchange can
 * use, and export timing the metrics SDK accepts.
 */
import type { ConfigFile } from "./schema.ts"

interface Findings {
  error(path: string, message: string): void
}

/** `http://` (plaintext) or `https://` (TLS) with a host: what the OTLP gRPC exporters and undici accept. */
const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

/** A day: longer intervals hold metrics for no use (and past ~24.8 days Node's timers would fire at once). */
const MAX_INTERVAL_SECS = 86_400

export const checkTelemetrySections = (file: ConfigFile, findings: Findings): void => {
  const { telemetry, genai_telemetry: genai, auth } = file
  if (telemetry.enabled && !isHttpUrl(telemetry.otlp_endpoint)) {
    findings.error("telemetry.otlp_endpoint", `expected the collector's OTLP gRPC address as an http:// or https:// URL, got ${JSON.stringify(telemetry.otlp_endpoint)}`)
  }
  if (genai.enabled && !isHttpUrl(genai.otlp_endpoint)) {
    findings.error("genai_telemetry.otlp_endpoint", `expected the collector's OTLP gRPC address as an http:// or https:// URL, got ${JSON.stringify(genai.otlp_endpoint)}`)
  }
  if (genai.enabled && genai.metrics_enabled && genai.metrics_export_interval_secs > MAX_INTERVAL_SECS) {
    findings.error(
      "genai_telemetry.metrics_export_interval_secs",
      `${genai.metrics_export_interval_secs} is longer than a day (${MAX_INTERVAL_SECS}); metrics would be held that long`
    )
  }
  if (genai.enabled && genai.metrics_enabled && genai.metrics_export_timeout_secs > genai.metrics_export_interval_secs) {
    findings.error(
      "genai_telemetry.metrics_export_timeout_secs",
      `${genai.metrics_export_timeout_secs} exceeds genai_telemetry.metrics_export_interval_secs (${genai.metrics_export_interval_secs}): an export must end before the next one starts`
    )
  }
  if (auth.enabled && auth.exchange_url !== undefined && auth.exchange_url !== "" && !isHttpUrl(auth.exchange_url)) {
    findings.error("auth.exchange_url", "expected an http:// or https:// URL")
  }
}
