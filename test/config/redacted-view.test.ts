/** The configuration as `check-config` prints it: defaults filled in, credentials described, secrets never shown. */
import { describe, expect, it } from "vitest"
import { Provider, redactedView, Target } from "../../src/config/index.ts"
import { load, withServer } from "./support.ts"

const KEY = "sk-view-test-key-0001"
const TOKEN = "tok-view-test-0002"
const PASSWORD = "pw-view-test-0003"

const settings = () =>
  load(
    withServer({
      providers: {
        openai: { models: ["gpt-4o"] },
        anthropic: { models: ["claude"], credential: "env::TEAM_ANTHROPIC_KEY" },
        ollama: { kind: "openai", base_url: "http://127.0.0.1:11434/v1/", models: ["llama"], credential: "none" },
        azure: { base_url: "https://res.openai.azure.com", models: ["gpt-4o-azure"] }
      },
      targets: { t: { model: "gpt-4o", credential: "env::TARGET_KEY", weight: 2 } },
      auth: { enabled: true, exchange_url: "https://auth.example/exchange", api_token: TOKEN },
      tenant_routing: { redis_url: `redis://default:${PASSWORD}@redis.internal:6379`, api_fallback_auth_token: TOKEN },
      genai_telemetry: { otlp_bearer_token: TOKEN },
      cache: { url: `rediss://:${PASSWORD}@cache.internal:6380/0`, encrypt_salt: PASSWORD }
    }),
    { OPENAI_API_KEY: KEY, TARGET_KEY: KEY }
  )

describe("redactedView", () => {
  it("describes each provider with its kind, resolved URL, auth and credential state", () => {
    const view = redactedView(settings()) as { providers: Record<string, unknown> }
    expect(view.providers).toEqual({
      openai: {
        kind: "openai",
        base_url: "https://api.openai.com/v1",
        models: ["gpt-4o"],
        credential: "env::OPENAI_API_KEY (convention) [set, redacted]",
        auth_type: "bearer",
        auth_header_name: undefined,
        timeout_ms: undefined,
        api_version: undefined,
        max_tokens_param: "max_completion_tokens",
        responses_api: true
      },
      anthropic: {
        kind: "anthropic",
        base_url: "https://api.anthropic.com",
        models: ["claude"],
        credential: "env::TEAM_ANTHROPIC_KEY [unset]",
        auth_type: "api_key_header",
        auth_header_name: "x-api-key",
        timeout_ms: undefined,
        api_version: undefined,
        max_tokens_param: undefined,
        responses_api: undefined
      },
      ollama: {
        kind: "openai",
        base_url: "http://127.0.0.1:11434/v1",
        models: ["llama"],
        credential: "none",
        auth_type: "bearer",
        auth_header_name: undefined,
        timeout_ms: undefined,
        api_version: undefined,
        max_tokens_param: "max_tokens",
        responses_api: false
      },
      azure: {
        kind: "azure",
        base_url: "https://res.openai.azure.com",
        models: ["gpt-4o-azure"],
        credential: "env::AZURE_OPENAI_API_KEY (convention) [unset]",
        auth_type: "api_key_header",
        auth_header_name: "api-key",
        timeout_ms: undefined,
        api_version: "2024-10-21",
        max_tokens_param: "max_completion_tokens",
        responses_api: true
      }
    })
  })

  it("describes targets with their provider (in the provider::model form) and credential state", () => {
    const view = redactedView(settings()) as { targets: Record<string, unknown> }
    expect(view.targets).toEqual({
      t: { model: "openai::gpt-4o", credential: "env::TARGET_KEY [set, redacted]", weight: 2, timeout_ms: undefined }
    })
  })

  it("check-config spells every provider and target key as the file does (auth_header_name, not auth_name)", () => {
    const view = redactedView(settings()) as { providers: Record<string, object>; targets: Record<string, object> }
    const providerKeys = Object.keys(Provider.fields).sort()
    for (const provider of Object.values(view.providers)) expect(Object.keys(provider).sort()).toEqual(providerKeys)
    expect(Object.keys(view.targets.t).sort()).toEqual(Object.keys(Target.fields).sort())
  })

  it("replaces tokens and the cache salt with [redacted]", () => {
    const view = redactedView(settings()) as Record<string, Record<string, unknown>>
    expect(view.auth.api_token).toBe("[redacted]")
    expect(view.tenant_routing.api_fallback_auth_token).toBe("[redacted]")
    expect(view.genai_telemetry.otlp_bearer_token).toBe("[redacted]")
    expect(view.cache.encrypt_salt).toBe("[redacted]")
  })

  it("masks the password of a Redis URL but keeps the rest of it", () => {
    const view = redactedView(settings()) as Record<string, Record<string, unknown>>
    expect(view.tenant_routing.redis_url).toBe("redis://default:redacted@redis.internal:6379")
    expect(view.cache.url).toBe("rediss://:redacted@cache.internal:6380/0")
  })

  it("never contains a key, a token or a password anywhere", () => {
    const text = JSON.stringify(redactedView(settings()))
    for (const secret of [KEY, TOKEN, PASSWORD]) expect(text).not.toContain(secret)
  })

  it("shows the defaults of every section", () => {
    const view = redactedView(load(withServer())) as Record<string, Record<string, unknown>>
    expect(Object.keys(view).sort()).toEqual(
      ["auth", "cache", "defaults", "functions", "genai_telemetry", "keys", "limits", "models", "providers", "responses", "routes", "routing", "security", "server", "targets", "telemetry", "tenant_routing", "metrics"].sort()
    )
    expect(view.server).toEqual({ host: "127.0.0.1", port: 4000, max_body_bytes: 33554432, max_upload_bytes: 536870912, shutdown_grace_secs: 30, body_idle_timeout_secs: 30, body_min_bytes_per_sec: 1024, max_connections: 10000, header_timeout_secs: 60, client_idle_timeout_secs: 600, workers: 1, watch_config: false })
    expect(view.cache.url).toBe("redis://localhost:6379")
    expect(view.genai_telemetry.otlp_bearer_token).toBe("")
  })
})
