/** Environment variable overrides (docs/reference/gateway-spec.md §2.7 table): each variable beats the TOML value; a bad value fails naming the variable. */
import { describe, expect, it } from "vitest"
import { ENV_OVERRIDES } from "../../src/config/index.ts"
import type { GenAiCall } from "../../src/pipeline/telemetry/genai/call.ts"
import { startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { requestProgram, settingsOf, startTelemetry } from "../pipeline/telemetry/support.ts"
import { failure, INVALID, load, warningsOf, withServer } from "./support.ts"

type Section = "telemetry" | "genai_telemetry" | "tenant_routing"

interface Case {
  readonly variable: string
  readonly section: Section
  readonly field: string
  /** The value written in the TOML file (the override must beat it). */
  readonly inFile: unknown
  readonly raw: string
  readonly expected: unknown
  /** A value the variable's type cannot read, and the type's name in the message. */
  readonly bad?: readonly [value: string, expected: string]
}

const BOOL = "true or false"
const INT = "an integer"
const NUMBER = "a number"

/** Every row of the spec's table, expanded. */
const CASES: ReadonlyArray<Case> = [
  { variable: "GATEWAY_TELEMETRY_ENABLED", section: "telemetry", field: "enabled", inFile: true, raw: "false", expected: false, bad: ["maybe", BOOL] },
  { variable: "OTEL_EXPORTER_OTLP_ENDPOINT", section: "telemetry", field: "otlp_endpoint", inFile: "http://file:4317", raw: "http://collector:4317", expected: "http://collector:4317" },
  { variable: "SERVICE_NAME", section: "telemetry", field: "service_name", inFile: "from-file", raw: "billing-gateway", expected: "billing-gateway" },
  { variable: "ENVIRONMENT", section: "telemetry", field: "environment", inFile: "production", raw: "staging", expected: "staging" },
  { variable: "OTEL_TRACES_SAMPLER_RATIO", section: "telemetry", field: "sample_ratio", inFile: 0.1, raw: "0.25", expected: 0.25, bad: ["a lot", NUMBER] },

  { variable: "GATEWAY_TENANT_ROUTING_ENABLED", section: "tenant_routing", field: "enabled", inFile: false, raw: "true", expected: true, bad: ["enabled", BOOL] },
  { variable: "GATEWAY_TENANT_ROUTING_REDIS_URL", section: "tenant_routing", field: "redis_url", inFile: "redis://file:6379", raw: "redis://env:6380", expected: "redis://env:6380" },
  { variable: "GATEWAY_TENANT_ROUTING_LRU_CAPACITY", section: "tenant_routing", field: "lru_capacity", inFile: 10, raw: "2500", expected: 2500, bad: ["2.5", INT] },
  { variable: "GATEWAY_TENANT_ROUTING_ANTI_ENTROPY_INTERVAL_SECS", section: "tenant_routing", field: "anti_entropy_interval_secs", inFile: 300, raw: "60", expected: 60, bad: ["1m", INT] },
  { variable: "GATEWAY_TENANT_ROUTING_API_FALLBACK_URL", section: "tenant_routing", field: "api_fallback_url", inFile: "https://file.example", raw: "https://env.example/snapshots", expected: "https://env.example/snapshots" },
  { variable: "GATEWAY_TENANT_ROUTING_API_FALLBACK_TIMEOUT_MS", section: "tenant_routing", field: "api_fallback_timeout_ms", inFile: 5000, raw: "750", expected: 750, bad: ["fast", INT] },
  { variable: "GATEWAY_TENANT_ROUTING_API_FALLBACK_AUTH_TOKEN", section: "tenant_routing", field: "api_fallback_auth_token", inFile: "file-token", raw: "env-token", expected: "env-token" },
  { variable: "GATEWAY_TENANT_ROUTING_LRU_IDLE_TIMEOUT_SECS", section: "tenant_routing", field: "lru_idle_timeout_secs", inFile: 3600, raw: "120", expected: 120, bad: ["", INT] },
  { variable: "GATEWAY_TENANT_ROUTING_PRIVATE_KEY_PATH", section: "tenant_routing", field: "private_key_path", inFile: "/file/key", raw: "/run/secrets/snapshot.key", expected: "/run/secrets/snapshot.key" },

  { variable: "GATEWAY_GENAI_TELEMETRY_ENABLED", section: "genai_telemetry", field: "enabled", inFile: false, raw: "true", expected: true, bad: ["2", BOOL] },
  { variable: "GATEWAY_GENAI_OTLP_ENDPOINT", section: "genai_telemetry", field: "otlp_endpoint", inFile: "http://file:4317", raw: "https://otlp.example:443", expected: "https://otlp.example:443" },
  { variable: "GATEWAY_GENAI_SERVICE_NAME", section: "genai_telemetry", field: "service_name", inFile: "from-file", raw: "genai-env", expected: "genai-env" },
  { variable: "GATEWAY_GENAI_ENVIRONMENT", section: "genai_telemetry", field: "environment", inFile: "production", raw: "dev", expected: "dev" },
  { variable: "GATEWAY_GENAI_SAMPLE_RATIO", section: "genai_telemetry", field: "sample_ratio", inFile: 1, raw: "0.5", expected: 0.5, bad: ["half", NUMBER] },
  { variable: "GATEWAY_GENAI_CAPTURE_CONTENT", section: "genai_telemetry", field: "capture_content", inFile: true, raw: "false", expected: false, bad: ["never", BOOL] },
  { variable: "GATEWAY_GENAI_OTLP_BEARER_TOKEN", section: "genai_telemetry", field: "otlp_bearer_token", inFile: "file-token", raw: "env-token", expected: "env-token" }
]

const valueOf = (settings: ReturnType<typeof load>, section: Section, field: string): unknown =>
  (settings.file[section] as Record<string, unknown>)[field]

describe("environment overrides", () => {
  it("the table has exactly the spec's variables", () => {
    expect(ENV_OVERRIDES.map((override) => override.variable).sort()).toEqual(CASES.map((c) => c.variable).sort())
    for (const c of CASES) {
      expect(ENV_OVERRIDES.find((override) => override.variable === c.variable)?.path).toEqual([c.section, c.field])
    }
  })

  it.each(CASES)("$variable overrides $section.$field from the file", ({ variable, section, field, inFile, raw, expected }) => {
    const fromFile = load(withServer({ [section]: { [field]: inFile } }))
    expect(valueOf(fromFile, section, field)).toEqual(inFile)
    const overridden = load(withServer({ [section]: { [field]: inFile } }), { [variable]: raw })
    expect(valueOf(overridden, section, field)).toEqual(expected)
  })

  it.each(CASES)("$variable applies when the section is absent from the file", ({ variable, section, field, raw, expected }) => {
    expect(valueOf(load(withServer(), { [variable]: raw }), section, field)).toEqual(expected)
  })

  it.each(CASES.filter((c) => c.bad !== undefined))(
    "$variable with a value of the wrong type fails naming the variable",
    ({ variable, section, field, bad }) => {
      const [value, expected] = bad!
      expect(failure(withServer(), { [variable]: value })).toBe(
        `${INVALID}${variable} (overrides ${section}.${field}): expected ${expected}, got ${JSON.stringify(value)}`
      )
    }
  )

  it("an override leaves the section's other keys as the file wrote them", () => {
    const settings = load(withServer({ telemetry: { service_name: "file-name", log_level: "debug" } }), { ENVIRONMENT: "qa" })
    expect(settings.file.telemetry).toMatchObject({ service_name: "file-name", log_level: "debug", environment: "qa" })
  })

  it("an unset variable leaves the file value", () => {
    expect(load(withServer({ telemetry: { service_name: "file-name" } }), { SERVICE_NAME: undefined }).file.telemetry.service_name).toBe("file-name")
  })

  it.each([["true", true], ["TRUE", true], ["1", true], ["yes", true], ["on", true], ["false", false], ["0", false], ["No", false], ["off", false]])(
    "boolean variables read %s as %s",
    (raw, expected) => {
      expect(load(withServer(), { GATEWAY_TELEMETRY_ENABLED: raw }).file.telemetry.enabled).toBe(expected)
    }
  )

  it("numbers may carry surrounding whitespace", () => {
    expect(load(withServer(), { GATEWAY_TENANT_ROUTING_LRU_CAPACITY: " 42 " }).file.tenant_routing.lru_capacity).toBe(42)
  })

  it("an overridden value out of range fails naming the key and the variable", () => {
    expect(failure(withServer(), { OTEL_TRACES_SAMPLER_RATIO: "2" })).toBe(
      `${INVALID}telemetry.sample_ratio (from OTEL_TRACES_SAMPLER_RATIO): expected a value between 0 and 1, got 2`
    )
    expect(failure(withServer(), { GATEWAY_GENAI_SAMPLE_RATIO: "-0.5" })).toBe(
      `${INVALID}genai_telemetry.sample_ratio (from GATEWAY_GENAI_SAMPLE_RATIO): expected a value between 0 and 1, got -0.5`
    )
    expect(failure(withServer(), { GATEWAY_TENANT_ROUTING_LRU_CAPACITY: "0" })).toBe(
      `${INVALID}tenant_routing.lru_capacity (from GATEWAY_TENANT_ROUTING_LRU_CAPACITY): expected a value greater than 0, got 0`
    )
    expect(failure(withServer(), { GATEWAY_TENANT_ROUTING_API_FALLBACK_TIMEOUT_MS: "-1" })).toBe(
      `${INVALID}tenant_routing.api_fallback_timeout_ms (from GATEWAY_TENANT_ROUTING_API_FALLBACK_TIMEOUT_MS): expected a value greater than 0, got -1`
    )
  })

  it("several bad variables are all reported", () => {
    expect(failure(withServer(), { GATEWAY_TELEMETRY_ENABLED: "maybe", OTEL_TRACES_SAMPLER_RATIO: "x" }).split("\n")).toEqual([
      "invalid configuration in test-gateway.toml:",
      `  - GATEWAY_TELEMETRY_ENABLED (overrides telemetry.enabled): expected true or false, got "maybe"`,
      `  - OTEL_TRACES_SAMPLER_RATIO (overrides telemetry.sample_ratio): expected a number, got "x"`
    ])
  })

  it("GATEWAY_TENANT_ROUTING_ANTI_ENTROPY_INTERVAL_SECS=0 falls back to 300 with a warning, like the file value", () => {
    const settings = load(withServer(), { GATEWAY_TENANT_ROUTING_ANTI_ENTROPY_INTERVAL_SECS: "0" })
    expect(settings.file.tenant_routing.anti_entropy_interval_secs).toBe(300)
    expect(settings.warnings).toEqual(["tenant_routing.anti_entropy_interval_secs: must be > 0, got 0; using 300"])
  })

  it("GATEWAY_TENANT_ROUTING_ENABLED=true without a private key path warns that snapshots are plaintext", () => {
    expect(warningsOf(withServer(), { GATEWAY_TENANT_ROUTING_ENABLED: "true" })).toEqual([
      "tenant_routing.private_key_path: not set: snapshots are read as plaintext JSON (development only)"
    ])
    expect(
      warningsOf(withServer(), { GATEWAY_TENANT_ROUTING_ENABLED: "true", GATEWAY_TENANT_ROUTING_PRIVATE_KEY_PATH: "/k" })
    ).toEqual([])
  })

  it("variables outside the table change nothing (metrics_enabled has no override)", () => {
    const settings = load(withServer(), { GATEWAY_GENAI_METRICS_ENABLED: "false", GATEWAY_SERVER_PORT: "1" })
    expect(settings.file.genai_telemetry.metrics_enabled).toBe(true)
    expect(settings.file.server.port).toBe(4000)
  })

  it("the input document is not modified by an override", () => {
    const document = withServer({ telemetry: { service_name: "file-name" } })
    load(document, { SERVICE_NAME: "env-name" })
    expect(document).toEqual(withServer({ telemetry: { service_name: "file-name" } }))
  })
})

describe("telemetry overrides reach the exporters", () => {
  const call: GenAiCall = {
    operation: "chat",
    requestedModel: "gpt-4o",
    upstream: { providerId: "openai", kind: "openai", origin: "https://api.openai.test", model: "gpt-4o" },
    request: { format: "canonical", request: { model: "gpt-4o", system: [], messages: [{ role: "user", content: [{ type: "text", text: "secret prompt" }] }], stream: false, includeUsage: false, unmapped: {}, untranslatable: [] } },
    stream: false,
    timing: { startedAt: 0, endedAt: 1 }
  }

  it("the [telemetry] variables set the endpoint, the resource and the sample ratio; the [genai_telemetry] ones theirs", async () => {
    const collector = await startOtlpReceiver()
    try {
      const file = {
        telemetry: { otlp_endpoint: "http://127.0.0.1:1", sample_ratio: 0, service_name: "file-gw" },
        genai_telemetry: { enabled: false, otlp_endpoint: "http://127.0.0.1:1", sample_ratio: 0, capture_content: true }
      }
      const env = {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        SERVICE_NAME: "env-gw",
        ENVIRONMENT: "env-staging",
        OTEL_TRACES_SAMPLER_RATIO: "1",
        GATEWAY_GENAI_TELEMETRY_ENABLED: "true",
        GATEWAY_GENAI_OTLP_ENDPOINT: collector.url,
        GATEWAY_GENAI_SERVICE_NAME: "env-genai",
        GATEWAY_GENAI_ENVIRONMENT: "env-genai-staging",
        GATEWAY_GENAI_SAMPLE_RATIO: "1",
        GATEWAY_GENAI_CAPTURE_CONTENT: "false",
        GATEWAY_GENAI_OTLP_BEARER_TOKEN: "env-collector-token"
      }
      const running = await startTelemetry(settingsOf(file, env))
      await running.run(requestProgram(running.telemetry))
      await running.run(running.telemetry.recordModelCall(call))
      await running.run(running.telemetry.flush)
      await running.close()
      await collector.waitFor((c) => c.spans().length >= 6)
      const server = collector.spans().find((span) => span.kind === 2)!
      expect(server.resource).toMatchObject({ "service.name": "env-gw", "deployment.environment.name": "env-staging" })
      const genai = collector.spans().find((span) => span.name === "chat gpt-4o")!
      expect(genai.resource).toMatchObject({ "service.name": "env-genai", "deployment.environment.name": "env-genai-staging" })
      expect(genai.metadata.authorization).toBe("Bearer env-collector-token")
      expect(server.metadata.authorization).toBeUndefined()
      expect(genai.attributes["gen_ai.input.messages"]).toBeUndefined()
    } finally {
      await collector.close()
    }
  })

  it("GATEWAY_TELEMETRY_ENABLED=false switches the application trace off", async () => {
    const running = await startTelemetry(settingsOf({ telemetry: { enabled: true } }, { GATEWAY_TELEMETRY_ENABLED: "false" }))
    expect(running.telemetry.tracing).toBe(false)
    await running.close()
  })
})
