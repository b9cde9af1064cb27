/** Types, ranges and enums of single fields (docs/reference/gateway-spec.md §2.7): each bad value fails naming the key path and the value. */
import { describe, expect, it } from "vitest"
import { failure, INVALID, load, withOpenAi, withServer } from "./support.ts"

const route = (fields: Record<string, unknown>) =>
  withOpenAi(["m"], {
    targets: { t: { model: "m" } },
    routes: { r: { endpoint: "chat", models: ["alias"], strategy: "single", targets: ["t"], ...fields } }
  })

const fn = (fields: Record<string, unknown>) =>
  withOpenAi(["m"], { functions: { f: { endpoint: "chat", strategy: "single", models: ["m"], ...fields } } })

describe("server.port", () => {
  it.each([0, 1, 4000, 65535])("accepts %d (0 lets the OS pick a free port)", (port) => {
    expect(load({ server: { port } }).file.server.port).toBe(port)
  })

  it("rejects 65536", () => {
    expect(failure({ server: { port: 65536 } })).toBe(`${INVALID}server.port: expected a value between 0 and 65535, got 65536`)
  })

  it("rejects a negative port", () => {
    expect(failure({ server: { port: -1 } })).toBe(`${INVALID}server.port: expected a value between 0 and 65535, got -1`)
  })

  it("rejects a fractional port", () => {
    expect(failure({ server: { port: 4000.5 } })).toBe(`${INVALID}server.port: expected an integer, got 4000.5`)
  })

  it("rejects a port written as a string", () => {
    expect(failure({ server: { port: "4000" } })).toBe(`${INVALID}server.port: expected number, got "4000"`)
  })
})

describe("sample_ratio is a number from 0.0 to 1.0", () => {
  it.each(["telemetry", "genai_telemetry"])("%s accepts both ends of the range", (section) => {
    expect(load(withServer({ [section]: { sample_ratio: 0 } })).file[section as "telemetry"].sample_ratio).toBe(0)
    expect(load(withServer({ [section]: { sample_ratio: 1 } })).file[section as "telemetry"].sample_ratio).toBe(1)
  })

  it.each(["telemetry", "genai_telemetry"])("%s rejects a ratio above 1", (section) => {
    expect(failure(withServer({ [section]: { sample_ratio: 1.5 } }))).toBe(
      `${INVALID}${section}.sample_ratio: expected a value between 0 and 1, got 1.5`
    )
  })

  it.each(["telemetry", "genai_telemetry"])("%s rejects a negative ratio", (section) => {
    expect(failure(withServer({ [section]: { sample_ratio: -0.1 } }))).toBe(
      `${INVALID}${section}.sample_ratio: expected a value between 0 and 1, got -0.1`
    )
  })
})

describe("enums", () => {
  const AUTH_TYPES = `expected "bearer" | "api_key_header" | "query_param" | "sigv4"`

  it("defaults.provider.auth_type must be bearer, api_key_header, query_param or sigv4", () => {
    expect(failure(withServer({ defaults: { provider: { auth_type: "basic" } } }))).toBe(
      `${INVALID}defaults.provider.auth_type: ${AUTH_TYPES}, got "basic"`
    )
  })

  it("a provider's auth_type must be bearer, api_key_header, query_param or sigv4", () => {
    expect(failure(withServer({ providers: { openai: { models: [], auth_type: "Bearer" } } }))).toBe(
      `${INVALID}providers.openai.auth_type: ${AUTH_TYPES}, got "Bearer"`
    )
  })

  it.each(["bearer", "api_key_header", "query_param"])("auth_type %s is accepted", (authType) => {
    const settings = load(withServer({ providers: { openai: { models: [], auth_type: authType, auth_header_name: "x-key" } } }))
    expect(settings.providers.get("openai")?.authType).toBe(authType)
  })

  it("a route's strategy must be single, weighted or fallback (experiment is for functions only)", () => {
    expect(failure(route({ strategy: "round_robin" }))).toBe(
      `${INVALID}routes.r.strategy: expected "single" | "weighted" | "fallback", got "round_robin"`
    )
    expect(failure(route({ strategy: "experiment" }))).toBe(
      `${INVALID}routes.r.strategy: expected "single" | "weighted" | "fallback", got "experiment"`
    )
  })

  it("a step's strategy must be single, weighted or fallback", () => {
    const document = withOpenAi(["m"], {
      targets: { t: { model: "m" } },
      routes: { r: { endpoint: "chat", models: ["alias"], strategy: "fallback", steps: [{ strategy: "random", targets: ["t"] }] } }
    })
    expect(failure(document)).toBe(
      `${INVALID}routes.r.steps[0].strategy: expected "single" | "weighted" | "fallback", got "random"`
    )
  })

  it("a function's strategy must be single, weighted, fallback or experiment", () => {
    expect(failure(fn({ strategy: "ab_test" }))).toBe(
      `${INVALID}functions.f.strategy: expected "single" | "weighted" | "fallback" | "experiment", got "ab_test"`
    )
  })

  const ENDPOINTS = `expected "chat" | "embeddings" | "audio_speech" | "audio_transcription" | "image_generation"`

  it("a route's endpoint must be one of the endpoint types", () => {
    expect(failure(route({ endpoint: "completions" }))).toBe(`${INVALID}routes.r.endpoint: ${ENDPOINTS}, got "completions"`)
  })

  it("a function's endpoint must be one of the endpoint types", () => {
    expect(failure(fn({ endpoint: "rerank" }))).toBe(`${INVALID}functions.f.endpoint: ${ENDPOINTS}, got "rerank"`)
  })

  it.each(["chat", "embeddings", "audio_speech", "audio_transcription", "image_generation"])(
    "endpoint %s is accepted",
    (endpoint) => {
      expect(load(route({ endpoint })).file.routes.r.endpoint).toBe(endpoint)
    }
  )

  it("cache.default_mode must be auto, always or never", () => {
    expect(failure(withServer({ cache: { default_mode: "sometimes" } }))).toBe(
      `${INVALID}cache.default_mode: expected "auto" | "always" | "never", got "sometimes"`
    )
  })

  it("telemetry.log_level must be a known level", () => {
    expect(failure(withServer({ telemetry: { log_level: "verbose" } }))).toBe(
      `${INVALID}telemetry.log_level: expected "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "none", got "verbose"`
    )
  })

  it("a provider's kind must be a known kind", () => {
    expect(failure(withServer({ providers: { groq: { kind: "groq", models: [] } } }))).toBe(
      `${INVALID}providers.groq.kind: expected "openai" | "anthropic" | "azure" | "cohere" | "gemini" | "bedrock" | "vertex", got "groq"`
    )
  })
})

describe("values that must be positive", () => {
  const positive: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["defaults.provider.timeout_ms", withServer({ defaults: { provider: { timeout_ms: 0 } } })],
    ["providers.openai.timeout_ms", withServer({ providers: { openai: { models: [], timeout_ms: 0 } } })],
    ["models.m.timeout_ms", withOpenAi(["m"], { models: { m: { timeout_ms: 0 } } })],
    ["models.m.max_tokens", withOpenAi(["m"], { models: { m: { max_tokens: 0 } } })],
    ["targets.t.timeout_ms", withOpenAi(["m"], { targets: { t: { model: "m", timeout_ms: 0 } } })],
    ["targets.t.weight", withOpenAi(["m"], { targets: { t: { model: "m", weight: 0 } } })],
    ["server.max_body_bytes", { server: { max_body_bytes: 0 } }],
    ["cache.ttl_seconds", withServer({ cache: { ttl_seconds: 0 } })],
    ["cache.max_ttl_seconds", withServer({ cache: { max_ttl_seconds: 0 } })],
    ["cache.max_entry_size_bytes", withServer({ cache: { max_entry_size_bytes: 0 } })],
    ["cache.pool_size", withServer({ cache: { pool_size: 0 } })],
    ["tenant_routing.lru_capacity", withServer({ tenant_routing: { lru_capacity: 0 } })],
    ["tenant_routing.api_fallback_timeout_ms", withServer({ tenant_routing: { api_fallback_timeout_ms: 0 } })],
    ["tenant_routing.lru_idle_timeout_secs", withServer({ tenant_routing: { lru_idle_timeout_secs: 0 } })],
    ["genai_telemetry.metrics_export_interval_secs", withServer({ genai_telemetry: { metrics_export_interval_secs: 0 } })],
    ["genai_telemetry.metrics_export_timeout_secs", withServer({ genai_telemetry: { metrics_export_timeout_secs: 0 } })],
    ["auth.exchange_timeout_ms", withServer({ auth: { exchange_timeout_ms: 0 } })],
    ["routing.circuit_breaker.failure_threshold", withServer({ routing: { circuit_breaker: { failure_threshold: 0 } } })],
    ["routing.circuit_breaker.recovery_timeout_ms", withServer({ routing: { circuit_breaker: { recovery_timeout_ms: 0 } } })]
  ]

  it.each(positive)("%s = 0 is rejected", (path, document) => {
    expect(failure(document)).toBe(`${INVALID}${path}: expected a value greater than 0, got 0`)
  })

  it("a negative timeout is rejected", () => {
    expect(failure(withServer({ providers: { openai: { models: [], timeout_ms: -5 } } }))).toBe(
      `${INVALID}providers.openai.timeout_ms: expected a value greater than 0, got -5`
    )
  })

  it("a fractional timeout is rejected", () => {
    expect(failure(withServer({ defaults: { provider: { timeout_ms: 1.5 } } }))).toBe(
      `${INVALID}defaults.provider.timeout_ms: expected an integer, got 1.5`
    )
  })
})

describe("values that may be zero but not negative", () => {
  const nonNegative: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["routing.retry.max_retries", withServer({ routing: { retry: { max_retries: -1 } } })],
    ["routing.retry.backoff_base_ms", withServer({ routing: { retry: { backoff_base_ms: -1 } } })],
    ["routes.r.retry.max_retries", route({ retry: { max_retries: -1 } })],
    ["functions.f.retry.backoff_base_ms", fn({ retry: { backoff_base_ms: -1 } })],
    ["server.shutdown_grace_secs", { server: { shutdown_grace_secs: -1 } }],
    ["auth.cache_skew_seconds", withServer({ auth: { cache_skew_seconds: -1 } })]
  ]

  it.each(nonNegative)("%s = -1 is rejected", (path, document) => {
    expect(failure(document)).toBe(`${INVALID}${path}: expected a value greater than or equal to 0, got -1`)
  })

  it("max_retries = 0 disables retries and is accepted", () => {
    expect(load(withServer({ routing: { retry: { max_retries: 0 } } })).file.routing.retry).toEqual({ max_retries: 0, backoff_base_ms: 500 })
  })

  it("a route's retry table fills its own defaults", () => {
    expect(load(route({ retry: { backoff_base_ms: 100 } })).file.routes.r.retry).toEqual({ max_retries: 2, backoff_base_ms: 100 })
  })
})

describe("wrong types", () => {
  it("a string where a boolean is expected", () => {
    expect(failure(withServer({ security: { enabled: "yes" } }))).toBe(`${INVALID}security.enabled: expected boolean, got "yes"`)
  })

  it("a number where a string is expected", () => {
    expect(failure({ server: { host: 8080 } })).toBe(`${INVALID}server.host: expected string, got 8080`)
  })

  it("a string where an array is expected", () => {
    expect(failure(withServer({ providers: { openai: { models: "gpt-4o" } } }))).toBe(
      `${INVALID}providers.openai.models: expected array, got "gpt-4o"`
    )
  })

  it("a non-string inside an array names the element", () => {
    expect(failure(withServer({ security: { blocklist: ["ok", 7] } }))).toBe(`${INVALID}security.blocklist[1]: expected string, got 7`)
  })

  it("a route's targets given as one string", () => {
    expect(failure(route({ targets: "t" }))).toBe(`${INVALID}routes.r.targets: expected array, got "t"`)
  })

  it("a value where a table is expected", () => {
    expect(failure({ server: 4000 })).toBe(`${INVALID}server: expected object, got 4000`)
  })

  it("an empty target model", () => {
    expect(failure(withOpenAi(["m"], { targets: { t: { model: "" } } }))).toBe(
      `${INVALID}targets.t.model: expected a value with a length of at least 1, got ""`
    )
  })

  it("a route without endpoint, models and strategy lists each missing key", () => {
    expect(failure(withOpenAi(["m"], { targets: { t: { model: "m" } }, routes: { r: { targets: ["t"] } } }))).toBe(
      `invalid configuration in test-gateway.toml:\n` +
        `  - routes.r.endpoint: is required\n` +
        `  - routes.r.models: is required\n` +
        `  - routes.r.strategy: is required`
    )
  })

  it("every wrong field is reported at once, one line each", () => {
    const message = failure({ server: { port: "x", host: 1 }, telemetry: { sample_ratio: 3 } })
    expect(message.split("\n")).toEqual([
      "invalid configuration in test-gateway.toml:",
      `  - server.host: expected string, got 1`,
      `  - server.port: expected number, got "x"`,
      `  - telemetry.sample_ratio: expected a value between 0 and 1, got 3`
    ])
  })

  it("a top level that is not a table", () => {
    expect(failure([1, 2])).toBe(`${INVALID}expected a TOML table at the top level`)
  })
})
