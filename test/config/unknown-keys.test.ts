/** Keys the configuration does not know: a warning naming the key path and, when close, the key probably meant. */
import { describe, expect, it } from "vitest"
import { failure, INVALID, load, warningsOf, withOpenAi, withServer } from "./support.ts"

describe("unknown keys", () => {
  it("a typo in [server] warns and suggests the key (prot → port)", () => {
    expect(warningsOf({ server: { prot: 8080 } })).toEqual([`server.prot: unknown key; did you mean "port"?`])
  })

  it("the misspelt key's value is not used: the default stays", () => {
    expect(load({ server: { prot: 8080 } }).file.server.port).toBe(4000)
  })

  it("a misspelt top-level table ([provider.openai]) stops the start and suggests the section", () => {
    expect(failure(withServer({ provider: { openai: { models: ["m"] } } }))).toBe(
      `${INVALID}provider: unknown top-level table; did you mean "providers"?`
    )
  })

  it("a misspelt [route.x] stops the start too, instead of a gateway that answers model_not_found to everything", () => {
    const document = withOpenAi(["m"], { targets: { a: { model: "m" } }, route: { x: { endpoint: "chat", models: ["x"], strategy: "single", targets: ["a"] } } })
    expect(failure(document)).toBe(`${INVALID}route: unknown top-level table; did you mean "routes"?`)
  })

  it("a stray top-level key (written above [server]) stops the start", () => {
    expect(failure({ server: {}, prot: 8080 })).toBe(`${INVALID}prot: unknown top-level key`)
  })

  it("a typo inside a provider table warns with the full path (base_ur → base_url)", () => {
    expect(warningsOf(withServer({ providers: { openai: { base_ur: "https://x.example", models: [] } } }))).toEqual([
      `providers.openai.base_ur: unknown key; did you mean "base_url"?`
    ])
  })

  it("a typo inside an array of steps names the step", () => {
    const document = withOpenAi(["m"], {
      targets: { a: { model: "m" } },
      routes: {
        r: {
          endpoint: "chat",
          models: ["x"],
          strategy: "fallback",
          steps: [{ strategy: "single", targets: ["a"] }, { strategy: "single", targets: ["a"], retries: 2 }]
        }
      }
    })
    expect(warningsOf(document)).toEqual([`routes.r.steps[1].retries: unknown key`])
  })

  it("typos in nested tables (defaults.provider, routing.retry, a route's retry, models, targets) are all reported", () => {
    const document = withOpenAi(["m"], {
      defaults: { provider: { timeout: 1000 }, providr: {} },
      routing: { retry: { max_retrys: 1 } },
      models: { m: { max_token: 10 } },
      targets: { a: { model: "m", wieght: 2 } },
      routes: { r: { endpoint: "chat", models: ["x"], strategy: "single", targets: ["a"], retry: { backoff_ms: 10 } } }
    })
    expect(warningsOf(document)).toEqual([
      `defaults.provider.timeout: unknown key; did you mean "timeout_ms"?`,
      `defaults.providr: unknown key; did you mean "provider"?`,
      `routing.retry.max_retrys: unknown key; did you mean "max_retries"?`,
      `models.m.max_token: unknown key; did you mean "max_tokens"?`,
      `targets.a.wieght: unknown key; did you mean "weight"?`,
      `routes.r.retry.backoff_ms: unknown key`
    ])
  })

  it("a key far from every known key gets no suggestion", () => {
    expect(warningsOf(withServer({ telemetry: { colour: "blue" } }))).toEqual([`telemetry.colour: unknown key`])
  })

  it("keys in sections of every kind are checked (security, cache, tenant_routing, auth, genai_telemetry)", () => {
    const document = withServer({
      security: { blocklst: [] },
      cache: { ttl_second: 5 },
      tenant_routing: { redis_ulr: "redis://x" },
      auth: { exchange_timeout: 100 },
      genai_telemetry: { capture_contents: false }
    })
    expect(warningsOf(document)).toEqual([
      `security.blocklst: unknown key; did you mean "blocklist"?`,
      `cache.ttl_second: unknown key; did you mean "ttl_seconds"?`,
      `tenant_routing.redis_ulr: unknown key; did you mean "redis_url"?`,
      `auth.exchange_timeout: unknown key; did you mean "exchange_timeout_ms"?`,
      `genai_telemetry.capture_contents: unknown key; did you mean "capture_content"?`
    ])
  })

  it("the names under providers, targets, routes, functions and models are ids, not unknown keys", () => {
    expect(warningsOf(withOpenAi(["anything-goes"], { models: { "anything-goes": {} } }))).toEqual([])
  })

  it("a variant's extra keys are request parameters, not unknown keys", () => {
    const document = withOpenAi(["m"], {
      functions: { f: { endpoint: "chat", strategy: "experiment", variants: { v: { model: "m", weight: 1, temperature: 0.1 } } } }
    })
    expect(warningsOf(document)).toEqual([])
  })

  it("unknown keys are listed under warnings when the configuration also fails", () => {
    expect(failure({ server: { prot: 1, port: -1 } })).toBe(
      `invalid configuration in test-gateway.toml: server.port: expected a value between 0 and 65535, got -1\n` +
        `warnings:\n` +
        `  - server.prot: unknown key; did you mean "port"?`
    )
  })

  it("unknown keys are listed when a cross-check fails too", () => {
    expect(failure(withServer({ auth: { enabled: true, exchange_ulr: "https://x" } }))).toBe(
      `invalid configuration in test-gateway.toml: auth.exchange_url: required when auth.enabled = true\n` +
        `warnings:\n` +
        `  - auth.exchange_ulr: unknown key; did you mean "exchange_url"?`
    )
  })

  it("unknown keys are listed when an environment variable is bad", () => {
    expect(failure(withServer({ telemetry: { enable: true } }), { GATEWAY_TELEMETRY_ENABLED: "perhaps" })).toBe(
      `invalid configuration in test-gateway.toml: GATEWAY_TELEMETRY_ENABLED (overrides telemetry.enabled): expected true or false, got "perhaps"\n` +
        `warnings:\n` +
        `  - telemetry.enable: unknown key; did you mean "enabled"?`
    )
  })
})
