/** `[telemetry]`, `[genai_telemetry]` and `[auth]`: the rules beyond each field's type, and what check-config shows. */
import { describe, expect, it } from "vitest"
import { redactedView } from "../../src/config/index.ts"
import { exportDelayOf, telemetrySettingsOf } from "../../src/pipeline/telemetry/settings.ts"
import { failure, INVALID, load, withServer } from "./support.ts"

describe("telemetry sections", () => {
  it("an enabled section needs an http(s) collector address", () => {
    expect(failure(withServer({ telemetry: { otlp_endpoint: "localhost:4317" } }))).toBe(
      `${INVALID}telemetry.otlp_endpoint: expected the collector's OTLP gRPC address as an http:// or https:// URL, got "localhost:4317"`
    )
    expect(failure(withServer({ genai_telemetry: { enabled: true, otlp_endpoint: "grpc://collector:4317" } }))).toBe(
      `${INVALID}genai_telemetry.otlp_endpoint: expected the collector's OTLP gRPC address as an http:// or https:// URL, got "grpc://collector:4317"`
    )
  })

  it("a disabled section's endpoint is not checked", () => {
    expect(load(withServer({ telemetry: { enabled: false, otlp_endpoint: "nowhere" } })).file.telemetry.enabled).toBe(false)
    expect(load(withServer({ genai_telemetry: { otlp_endpoint: "nowhere" } })).file.genai_telemetry.enabled).toBe(false)
  })

  it("an endpoint set by an environment variable is named in the error", () => {
    expect(failure(withServer(), { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4317" })).toBe(
      `${INVALID}telemetry.otlp_endpoint (from OTEL_EXPORTER_OTLP_ENDPOINT): expected the collector's OTLP gRPC address as an http:// or https:// URL, got "collector:4317"`
    )
  })

  it("an explicit metrics export timeout above the export interval stops the start", () => {
    expect(failure(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 5, metrics_export_timeout_secs: 10 } }))).toBe(
      `${INVALID}genai_telemetry.metrics_export_timeout_secs: 10 exceeds genai_telemetry.metrics_export_interval_secs (5): an export must end before the next one starts`
    )
    expect(load(withServer({ genai_telemetry: { enabled: true, metrics_enabled: false, metrics_export_interval_secs: 5, metrics_export_timeout_secs: 10 } })).file.genai_telemetry.metrics_enabled).toBe(false)
  })

  it("export_delay_ms: how long a span waits for its batch, 1 s unless set, a whole number of milliseconds above 0", () => {
    expect(exportDelayOf(telemetrySettingsOf(load(withServer()).file))).toBe(1000)
    expect(exportDelayOf(telemetrySettingsOf(load(withServer({ telemetry: { export_delay_ms: 5000 } })).file))).toBe(5000)
    expect(failure(withServer({ telemetry: { export_delay_ms: 0 } }))).toBe(`${INVALID}telemetry.export_delay_ms: expected a value greater than 0, got 0`)
  })

  it("an interval set alone starts: an unset export timeout is min(10, interval)", () => {
    const short = load(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 1 } })).file.genai_telemetry
    expect(short.metrics_export_timeout_secs).toBe(1)
    const long = load(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 60 } })).file.genai_telemetry
    expect(long.metrics_export_timeout_secs).toBe(10)
    expect(load(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 8, metrics_export_timeout_secs: 3 } })).file.genai_telemetry.metrics_export_timeout_secs).toBe(3)
  })

  it("the metrics export interval is at most a day", () => {
    expect(failure(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 86_401 } }))).toBe(
      `${INVALID}genai_telemetry.metrics_export_interval_secs: 86401 is longer than a day (86400); metrics would be held that long`
    )
    expect(load(withServer({ genai_telemetry: { enabled: true, metrics_export_interval_secs: 86_400 } })).file.genai_telemetry.metrics_export_interval_secs).toBe(86_400)
  })

  it("the exchange URL must be http(s)", () => {
    expect(failure(withServer({ auth: { enabled: true, exchange_url: "auth.example/exchange" } }))).toBe(`${INVALID}auth.exchange_url: expected an http:// or https:// URL`)
    expect(load(withServer({ auth: { enabled: true, exchange_url: "https://auth.example/v1/exchange" } })).file.auth.cache_skew_seconds).toBe(60)
  })

  it("defaults follow the specification", () => {
    const { telemetry, genai_telemetry: genai, auth } = load(withServer()).file
    expect(telemetry).toEqual({ enabled: true, otlp_endpoint: "http://localhost:4317", service_name: "gateway", environment: "production", sample_ratio: 0.1, log_level: "info", log_format: "auto" })
    expect(genai).toEqual({
      enabled: false,
      otlp_endpoint: "http://localhost:4317",
      service_name: "gateway-genai-telemetry",
      environment: "production",
      sample_ratio: 1,
      metrics_enabled: true,
      metrics_export_interval_secs: 30,
      metrics_export_timeout_secs: 10,
      capture_content: true,
      otlp_bearer_token: ""
    })
    expect(auth).toEqual({ enabled: false, cache_skew_seconds: 60, exchange_timeout_ms: 2000 })
  })

  it("check-config shows the collector token and the platform api_token only as set or not", () => {
    const view = redactedView(load(withServer({
      genai_telemetry: { enabled: true, otlp_bearer_token: "collector-secret" },
      auth: { enabled: true, exchange_url: "https://auth.example/x", api_token: "pk-secret", project_id: "proj-1" }
    }))) as Record<string, Record<string, unknown>>
    expect(view.genai_telemetry.otlp_bearer_token).toBe("[redacted]")
    expect(view.auth.api_token).toBe("[redacted]")
    expect(view.auth.project_id).toBe("proj-1")
    expect(JSON.stringify(view)).not.toMatch(/collector-secret|pk-secret/)
  })
})
