import { Effect, Exit, Result } from "effect"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { configPath, DEFAULT_CONFIG_PATH, GatewayConfig, loadSettings } from "../../src/config/index.ts"
import { tempFiles } from "./support.ts"
import type { TempFiles } from "./support.ts"

let files: TempFiles
const fresh = () => (files = tempFiles())
afterEach(() => files?.cleanup())

/** Every section's value of docs/reference/gateway-spec.md §2.7 (plus the gateway's additions) when the file holds only `[server]`. */
const DEFAULTS = {
  server: { host: "127.0.0.1", port: 4000, max_body_bytes: 33554432, max_upload_bytes: 536870912, shutdown_grace_secs: 30, body_idle_timeout_secs: 30, body_min_bytes_per_sec: 1024, max_connections: 10000, header_timeout_secs: 60, client_idle_timeout_secs: 600, workers: 1, watch_config: false },
  defaults: { provider: {} },
  providers: {},
  models: {},
  targets: {},
  routes: {},
  functions: {},
  routing: {
    retry: { max_retries: 2, backoff_base_ms: 500 },
    circuit_breaker: { enabled: false, failure_threshold: 5, recovery_timeout_ms: 30000 }
  },
  security: { enabled: false, blocklist: [], output_guardrails: false },
  telemetry: {
    enabled: true,
    otlp_endpoint: "http://localhost:4317",
    service_name: "gateway",
    environment: "production",
    sample_ratio: 0.1,
    log_level: "info",
    log_format: "auto"
  },
  genai_telemetry: {
    enabled: false,
    otlp_endpoint: "http://localhost:4317",
    service_name: "gateway-genai-telemetry",
    environment: "production",
    sample_ratio: 1.0,
    metrics_enabled: true,
    metrics_export_interval_secs: 30,
    metrics_export_timeout_secs: 10,
    capture_content: true,
    otlp_bearer_token: ""
  },
  auth: { enabled: false, cache_skew_seconds: 60, exchange_timeout_ms: 2000 },
  keys: {},
  limits: { on_store_error: "allow", pool_size: 4, timeout_ms: 250, default_output_tokens: 4096 },
  responses: { enabled: false, store_ttl_seconds: 2592000, max_entry_size_bytes: 4194304, pool_size: 4, timeout_ms: 1000 },
  tenant_routing: {
    enabled: false,
    redis_url: "redis://localhost:6379",
    lru_capacity: 1000,
    anti_entropy_interval_secs: 300,
    api_fallback_timeout_ms: 5000,
    lru_idle_timeout_secs: 3600
  },
  cache: {
    enabled: false,
    url: "redis://localhost:6379",
    default_mode: "auto",
    ttl_seconds: 604800,
    max_ttl_seconds: 604800,
    max_entry_size_bytes: 1048576,
    pool_size: 8,
    encrypt: true,
    encrypt_salt: ""
  },
  metrics: { enabled: true, host: "127.0.0.1" }
}

describe("loading the configuration file", () => {
  it("a file with only an empty [server] gets every default of docs/reference/gateway-spec.md §2.7, with no warnings", () => {
    fresh()
    const path = files.write("gateway.toml", "[server]\n")
    const result = loadSettings(path, {})
    if (Result.isFailure(result)) throw result.failure
    expect(result.success.file).toEqual(DEFAULTS)
    expect(result.success.source).toBe(path)
    expect(result.success.warnings).toEqual([])
    expect(result.success.providers.size).toBe(0)
    expect(result.success.targets.size).toBe(0)
  })

  it("optional fields without a default stay absent (api_token, exchange_url, private_key_path, provider timeouts)", () => {
    fresh()
    const result = loadSettings(files.write("gateway.toml", "[server]\n"), {})
    if (Result.isFailure(result)) throw result.failure
    const { file } = result.success
    expect("exchange_url" in file.auth).toBe(false)
    expect("api_token" in file.auth).toBe(false)
    expect("project_id" in file.auth).toBe(false)
    expect("api_fallback_url" in file.tenant_routing).toBe(false)
    expect("api_fallback_auth_token" in file.tenant_routing).toBe(false)
    expect("private_key_path" in file.tenant_routing).toBe(false)
    expect(file.defaults.provider).toEqual({})
  })

  it("values in the file replace the defaults of their own keys only", () => {
    fresh()
    const path = files.write("gateway.toml", `[server]\nhost = "0.0.0.0"\n\n[telemetry]\nsample_ratio = 0.5\n`)
    const result = loadSettings(path, {})
    if (Result.isFailure(result)) throw result.failure
    expect(result.success.file.server).toEqual({ ...DEFAULTS.server, host: "0.0.0.0" })
    expect(result.success.file.telemetry).toEqual({ ...DEFAULTS.telemetry, sample_ratio: 0.5 })
  })

  it("a file without [server] fails: [server] is the one required section", () => {
    fresh()
    const path = files.write("gateway.toml", "[telemetry]\nenabled = false\n")
    const result = loadSettings(path, {})
    expect(Result.isFailure(result)).toBe(true)
    if (Result.isFailure(result)) expect(result.failure.message).toBe(`invalid configuration in ${path}: server: is required`)
  })

  it("an empty file fails because [server] is missing", () => {
    fresh()
    const path = files.write("gateway.toml", "")
    const result = loadSettings(path, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toBe(`invalid configuration in ${path}: server: is required`)
  })

  it("a missing file fails naming the path", () => {
    fresh()
    const path = join(files.dir, "does-not-exist.toml")
    const result = loadSettings(path, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toBe(`cannot read configuration ${path}: file not found`)
    expect(result.failure._tag).toBe("ConfigError")
  })

  it("a directory instead of a file fails naming the path", () => {
    fresh()
    const result = loadSettings(files.dir, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toMatch(new RegExp(`^cannot read configuration ${files.dir}: EISDIR`))
  })

  it("invalid TOML fails naming the file, the line and the column", () => {
    fresh()
    const path = files.write("gateway.toml", `[server]\nport = 4000\nhost = \n`)
    const result = loadSettings(path, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toMatch(new RegExp(`^invalid TOML in ${path}: line 3, column 8: \\S`))
    expect(result.failure.message).not.toContain("\n")
  })

  it("a table defined twice is a TOML error at the second definition", () => {
    fresh()
    const path = files.write("gateway.toml", `[server]\nport = 4000\n\n[server]\nhost = "x"\n`)
    const result = loadSettings(path, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toMatch(new RegExp(`^invalid TOML in ${path}: line 4, column \\d+: .*redefine`))
  })

  it("a schema error in a file names the file and the key path", () => {
    fresh()
    const path = files.write("gateway.toml", `[server]\nport = "4000"\n`)
    const result = loadSettings(path, {})
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.message).toBe(`invalid configuration in ${path}: server.port: expected number, got "4000"`)
  })
})

describe("which file is read", () => {
  it("config/gateway.toml relative to the working directory by default", () => {
    expect(DEFAULT_CONFIG_PATH).toBe("config/gateway.toml")
    expect(configPath(undefined, {})).toBe("config/gateway.toml")
  })

  it("GATEWAY_CONFIG names another file", () => {
    expect(configPath(undefined, { GATEWAY_CONFIG: "/etc/gateway/prod.toml" })).toBe("/etc/gateway/prod.toml")
  })

  it("an empty GATEWAY_CONFIG is ignored", () => {
    expect(configPath(undefined, { GATEWAY_CONFIG: "" })).toBe("config/gateway.toml")
  })

  it("an explicit path (check-config PATH, serve --config PATH) wins over GATEWAY_CONFIG", () => {
    expect(configPath("mine.toml", { GATEWAY_CONFIG: "theirs.toml" })).toBe("mine.toml")
  })

  it("the GatewayConfig service reads the file GATEWAY_CONFIG names", async () => {
    fresh()
    const path = files.write("chosen.toml", "[server]\nport = 4123\n")
    const settings = await Effect.runPromise(GatewayConfig.load(undefined, { GATEWAY_CONFIG: path }))
    expect(settings.source).toBe(path)
    expect(settings.file.server.port).toBe(4123)
  })

  it("the GatewayConfig service fails with the ConfigError message for an invalid file", () => {
    fresh()
    const path = files.write("chosen.toml", "[server]\nport = 65536\n")
    const exit = Effect.runSyncExit(GatewayConfig.load(path, {}))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(exit)).toContain(`invalid configuration in ${path}: server.port: expected a value between 0 and 65535, got 65536`)
  })

  it("GatewayConfig.fromDocument validates a literal document the same way", () => {
    expect(GatewayConfig.fromDocument({ server: { port: 4001 } }).file.server.port).toBe(4001)
    expect(() => GatewayConfig.fromDocument({})).toThrow("invalid configuration in <inline>: server: is required")
  })
})
