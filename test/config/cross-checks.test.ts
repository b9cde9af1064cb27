/** Startup checks across sections (docs/reference/gateway-spec.md §2.7, docs/reference/DESIGN.md "Model resolution"): what stops the start and what only warns. */
import { describe, expect, it } from "vitest"
import { failure, INVALID, load, warningsOf, withOpenAi, withServer } from "./support.ts"

const twoProviders = (sections: Record<string, unknown> = {}) =>
  withServer({
    providers: {
      openai: { models: ["gpt-4o", "shared"] },
      groq: { kind: "openai", base_url: "https://api.groq.com/openai/v1", models: ["llama", "shared"] }
    },
    ...sections
  })

const experiment = (variants: Record<string, Record<string, unknown>>, endpoint = "chat") =>
  withOpenAi(["m"], {
    targets: { t: { model: "m" } },
    functions: { f: { endpoint, strategy: "experiment", variants } }
  })

describe("target models", () => {
  it("a target model no provider serves stops the start", () => {
    expect(failure(withOpenAi(["gpt-4o"], { targets: { t: { model: "gpt-5" } } }))).toBe(
      `${INVALID}targets.t.model: model "gpt-5" is not in any provider's models; did you mean "gpt-4o"?`
    )
  })

  it("a plain target model served by two providers stops the start and suggests both explicit forms", () => {
    expect(failure(twoProviders({ targets: { t: { model: "shared" } } }))).toBe(
      `${INVALID}targets.t.model: model "shared" is served by 2 providers; write "openai::shared" or "groq::shared"`
    )
  })

  it("the provider::model form picks one of the two providers", () => {
    const settings = load(twoProviders({ targets: { a: { model: "openai::shared" }, b: { model: "groq::shared" } } }))
    expect(settings.targets.get("a")).toMatchObject({ providerId: "openai", model: "shared", weight: 1 })
    expect(settings.targets.get("b")).toMatchObject({ providerId: "groq", model: "shared" })
  })

  it("provider::model with an unknown provider stops the start", () => {
    expect(failure(twoProviders({ targets: { t: { model: "mistral::shared" } } }))).toBe(
      `${INVALID}targets.t.model: provider "mistral" is not configured`
    )
  })

  it("provider::model with a model that provider does not serve stops the start", () => {
    expect(failure(twoProviders({ targets: { t: { model: "groq::gpt-4o" } } }))).toBe(
      `${INVALID}targets.t.model: model "gpt-4o" is not in providers.groq.models`
    )
  })

  it("a plain model served by one provider binds the target to it", () => {
    expect(load(twoProviders({ targets: { t: { model: "llama", weight: 3, timeout_ms: 1000 } } })).targets.get("t")).toEqual({
      id: "t",
      model: "llama",
      providerId: "groq",
      credential: undefined,
      weight: 3,
      timeoutMs: 1000
    })
  })

  it("two providers serving one model is fine as long as nothing names it plainly", () => {
    expect(warningsOf(twoProviders())).toEqual([])
  })
})

describe("every problem in one pass", () => {
  const lines = (document: unknown, env = {}) => failure(document, env).split("\n")

  it("a bad strategy, a target model no provider serves and a missing target show up together", () => {
    const document = withOpenAi(["gpt-4o"], {
      targets: { a: { model: "gpt4o" } },
      routes: { r: { endpoint: "chat", models: ["smart"], strategy: "round_robin", targets: ["a", "primary"] } }
    })
    expect(lines(document)).toEqual([
      "invalid configuration in test-gateway.toml:",
      `  - routes.r.strategy: expected "single" | "weighted" | "fallback", got "round_robin"`,
      `  - targets.a.model: model "gpt4o" is not in any provider's models; did you mean "gpt-4o"?`,
      `  - routes.r.targets[1]: unknown target "primary"`
    ])
  })

  it("a value out of range and a failed cross-check show up together", () => {
    expect(lines(withServer({ server: { port: -1 }, auth: { enabled: true } }))).toEqual([
      "invalid configuration in test-gateway.toml:",
      "  - server.port: expected a value between 0 and 65535, got -1",
      "  - auth.exchange_url: required when auth.enabled = true"
    ])
  })

  it("an unreadable environment override, a bad value and a failed cross-check show up together", () => {
    expect(lines(withServer({ routes: { r: { endpoint: "chat", models: ["x"], strategy: "single", targets: ["a"], retry: { max_retries: -1 } } } }), { GATEWAY_TELEMETRY_ENABLED: "perhaps" })).toEqual([
      "invalid configuration in test-gateway.toml:",
      `  - GATEWAY_TELEMETRY_ENABLED (overrides telemetry.enabled): expected true or false, got "perhaps"`,
      "  - routes.r.retry.max_retries: expected a value greater than or equal to 0, got -1",
      `  - routes.r.targets[0]: unknown target "a"`
    ])
  })

  it("a bad element of a provider's models leaves the others served: its targets still resolve", () => {
    const document = withServer({
      providers: { openai: { models: ["m", 5] } },
      targets: { a: { model: "m" } },
      routes: { r: { endpoint: "chat", models: ["x"], strategy: "single", targets: ["a", "b"] } }
    })
    expect(lines(document)).toEqual([
      "invalid configuration in test-gateway.toml:",
      "  - providers.openai.models[1]: expected string, got 5",
      `  - routes.r.targets: strategy "single" takes exactly one target, got 2; use "fallback" or "weighted"`,
      `  - routes.r.targets[1]: unknown target "b"`
    ])
  })

  it("a refused value is reported once: the checks do not report what the schema already did", () => {
    const document = withOpenAi(["m"], {
      targets: { a: { model: "m" } },
      routes: { r: { endpoint: "chat", models: "smart", strategy: "fallback", steps: [{ strategy: "sequential", targets: ["a", "b"] }] } }
    })
    expect(lines(document)).toEqual([
      "invalid configuration in test-gateway.toml:",
      `  - routes.r.models: expected array, got "smart"`,
      `  - routes.r.steps[0].strategy: expected "single" | "weighted" | "fallback", got "sequential"`,
      `  - routes.r.steps[0].targets[1]: unknown target "b"`
    ])
  })
})

describe("did you mean", () => {
  it("a target model no provider serves suggests the closest model a provider serves", () => {
    expect(failure(withOpenAi(["gpt-4o", "gpt-4o-mini"], { targets: { t: { model: "gpt-4o-mnii" } } }))).toBe(
      `${INVALID}targets.t.model: model "gpt-4o-mnii" is not in any provider's models; did you mean "gpt-4o-mini"?`
    )
  })

  it("an unknown provider in provider::model suggests the closest configured provider", () => {
    expect(failure(twoProviders({ targets: { t: { model: "grok::llama" } } }))).toBe(
      `${INVALID}targets.t.model: provider "grok" is not configured; did you mean "groq"?`
    )
  })

  it("a model the named provider does not serve suggests the closest of its models", () => {
    expect(failure(twoProviders({ targets: { t: { model: "groq::lama" } } }))).toBe(
      `${INVALID}targets.t.model: model "lama" is not in providers.groq.models; did you mean "llama"?`
    )
  })

  it("an unknown target name suggests the closest target (primry → primary)", () => {
    const document = withOpenAi(["m"], {
      targets: { primary: { model: "m" } },
      routes: { r: { endpoint: "chat", models: ["alias"], strategy: "single", targets: ["primry"] } }
    })
    expect(failure(document)).toBe(`${INVALID}routes.r.targets[0]: unknown target "primry"; did you mean "primary"?`)
  })

  it("an unknown name far from every known one gets no suggestion", () => {
    expect(failure(withOpenAi(["gpt-4o"], { targets: { t: { model: "claude-sonnet" } } }))).toBe(
      `${INVALID}targets.t.model: model "claude-sonnet" is not in any provider's models`
    )
  })

  it("a variant parameter one edit away from an allowlisted name warns with a suggestion (temprature → temperature)", () => {
    expect(warningsOf(experiment({ v: { model: "m", weight: 1, temprature: 0.3 } }))).toEqual([
      `functions.f.variants.v.temprature: not a known chat parameter; did you mean "temperature"? passed through as is`
    ])
  })
})

describe("routes", () => {
  const route = (fields: Record<string, unknown>) =>
    withOpenAi(["m", "n"], {
      targets: { a: { model: "m" }, b: { model: "n" } },
      routes: { r: { endpoint: "chat", models: ["alias"], strategy: "fallback", ...fields } }
    })

  it("an unknown target stops the start, naming its position", () => {
    expect(failure(route({ targets: ["a", "missing"] }))).toBe(`${INVALID}routes.r.targets[1]: unknown target "missing"`)
  })

  it("an unknown target inside a step stops the start, naming the step", () => {
    expect(failure(route({ steps: [{ strategy: "single", targets: ["a"] }, { strategy: "fallback", targets: ["b", "nope"] }] }))).toBe(
      `${INVALID}routes.r.steps[1].targets[1]: unknown target "nope"`
    )
  })

  it("a route with neither targets nor steps stops the start", () => {
    expect(failure(route({}))).toBe(`${INVALID}routes.r: needs targets or steps`)
  })

  it("an empty target list stops the start", () => {
    expect(failure(route({ targets: [] }))).toBe(`${INVALID}routes.r.targets: needs at least one target`)
  })

  it("an empty step list stops the start", () => {
    expect(failure(route({ steps: [] }))).toBe(`${INVALID}routes.r.steps: needs at least one step`)
  })

  it("strategy single with two targets stops the start", () => {
    expect(failure(route({ strategy: "single", targets: ["a", "b"] }))).toBe(
      `${INVALID}routes.r.targets: strategy "single" takes exactly one target, got 2; use "fallback" or "weighted"`
    )
  })

  it("a single step with two targets stops the start", () => {
    expect(failure(route({ steps: [{ strategy: "single", targets: ["a", "b"] }] }))).toBe(
      `${INVALID}routes.r.steps[0].targets: strategy "single" takes exactly one target, got 2; use "fallback" or "weighted"`
    )
  })

  it("a route with no model names stops the start", () => {
    expect(failure(route({ models: [], targets: ["a"] }))).toBe(`${INVALID}routes.r.models: needs at least one model name`)
  })

  it("weighted and fallback routes with targets load", () => {
    expect(load(route({ strategy: "weighted", targets: ["a", "b"] })).file.routes.r.targets).toEqual(["a", "b"])
    expect(load(route({ targets: ["a", "b"] })).file.routes.r.strategy).toBe("fallback")
  })

  it("steps are accepted in place of targets", () => {
    const steps = [{ strategy: "weighted", targets: ["a", "b"] }, { strategy: "single", targets: ["b"] }]
    expect(load(route({ steps })).file.routes.r.steps).toEqual(steps)
  })
})

describe("functions", () => {
  const fn = (fields: Record<string, unknown>, providers: Record<string, unknown> = { openai: { models: ["m", "n"] } }) =>
    withServer({
      providers,
      targets: { a: { model: "openai::m" } },
      functions: { f: { endpoint: "chat", strategy: "fallback", ...fields } }
    })

  it("inline models and targets together stop the start", () => {
    expect(failure(fn({ models: ["m"], targets: ["a"] }))).toBe(`${INVALID}functions.f: models and targets are mutually exclusive`)
  })

  it("inline models and steps together stop the start", () => {
    expect(failure(fn({ models: ["m"], steps: [{ strategy: "single", targets: ["a"] }] }))).toBe(
      `${INVALID}functions.f: models and steps are mutually exclusive`
    )
  })

  it("an inline model that no provider serves stops the start", () => {
    expect(failure(fn({ models: ["m", "zz"] }))).toBe(`${INVALID}functions.f.models[1]: model "zz" is not in any provider's models`)
  })

  it("an inline model served by two providers stops the start and suggests both explicit forms", () => {
    const providers = { openai: { models: ["m"] }, azure: { base_url: "https://x.openai.azure.com", models: ["m"] } }
    expect(failure(fn({ models: ["m"] }, providers))).toBe(
      `${INVALID}functions.f.models[0]: model "m" is served by 2 providers; write "openai::m" or "azure::m"`
    )
  })

  it("an inline model in provider::model form resolves", () => {
    const providers = { openai: { models: ["m"] }, azure: { base_url: "https://x.openai.azure.com", models: ["m"] } }
    expect(load(fn({ models: ["azure::m"] }, providers)).file.functions.f.models).toEqual(["azure::m"])
  })

  it("a function with only targets or only steps loads", () => {
    expect(warningsOf(fn({ targets: ["a"] }))).toEqual([])
    expect(warningsOf(fn({ steps: [{ strategy: "single", targets: ["a"] }] }))).toEqual([])
  })

  it("a function with nothing to call stops the start", () => {
    expect(failure(fn({}))).toBe(`${INVALID}functions.f: needs models, targets, steps or (with strategy experiment) variants`)
  })

  it("strategy single with two inline models stops the start", () => {
    expect(failure(fn({ strategy: "single", models: ["m", "n"] }))).toBe(
      `${INVALID}functions.f.models: strategy "single" takes exactly one model, got 2`
    )
  })

  it("an unknown target in a function stops the start", () => {
    expect(failure(fn({ targets: ["nope"] }))).toBe(`${INVALID}functions.f.targets[0]: unknown target "nope"`)
  })

  it("variants without strategy experiment stop the start", () => {
    expect(failure(fn({ targets: ["a"], variants: { v: { model: "m", weight: 1 } } }))).toBe(
      `${INVALID}functions.f.variants: variants need strategy = "experiment"`
    )
  })
})

describe("experiment variants", () => {
  it("a variant with a model and a weight loads; its extra keys are request parameters", () => {
    const settings = load(experiment({ fast: { model: "m", weight: 3, temperature: 0.2 }, careful: { target: "t", weight: 1, max_tokens: 64 } }))
    expect(settings.warnings).toEqual([])
    expect(settings.file.functions.f.variants).toEqual({
      fast: { model: "m", weight: 3, temperature: 0.2 },
      careful: { target: "t", weight: 1, max_tokens: 64 }
    })
  })

  it("weight 0 stops the start", () => {
    expect(failure(experiment({ v: { model: "m", weight: 0 } }))).toBe(`${INVALID}functions.f.variants.v.weight: must be greater than 0, got 0`)
  })

  it("a negative weight stops the start", () => {
    expect(failure(experiment({ v: { model: "m", weight: -2 } }))).toBe(`${INVALID}functions.f.variants.v.weight: must be greater than 0, got -2`)
  })

  it("a fractional weight stops the start (weights are integers)", () => {
    expect(failure(experiment({ v: { model: "m", weight: 1.5 } }))).toBe(`${INVALID}functions.f.variants.v.weight: expected an integer, got 1.5`)
  })

  it("a missing weight stops the start", () => {
    expect(failure(experiment({ v: { model: "m" } }))).toBe(`${INVALID}functions.f.variants.v.weight: is required`)
  })

  it("model and target together stop the start", () => {
    expect(failure(experiment({ v: { model: "m", target: "t", weight: 1 } }))).toBe(
      `${INVALID}functions.f.variants.v: set exactly one of model or target`
    )
  })

  it("neither model nor target stops the start", () => {
    expect(failure(experiment({ v: { weight: 1 } }))).toBe(`${INVALID}functions.f.variants.v: set exactly one of model or target`)
  })

  it("a variant model no provider serves stops the start", () => {
    expect(failure(experiment({ v: { model: "zz", weight: 1 } }))).toBe(
      `${INVALID}functions.f.variants.v.model: model "zz" is not in any provider's models`
    )
  })

  it("a variant target that does not exist stops the start", () => {
    expect(failure(experiment({ v: { target: "nope", weight: 1 } }))).toBe(`${INVALID}functions.f.variants.v.target: unknown target "nope"`)
  })

  it("model is the variant's own key (the model to call), so it can never be a parameter override", () => {
    // `model` is protected by construction: it is read as the variant's model reference and checked as one.
    const settings = load(experiment({ v: { model: "m", weight: 1 } }))
    expect(settings.warnings).toEqual([])
    expect(failure(experiment({ v: { target: "t", model: "m", weight: 1 } }))).toBe(
      `${INVALID}functions.f.variants.v: set exactly one of model or target`
    )
  })

  it.each(["messages", "input", "file", "prompt", "stream"])("the protected parameter %s stops the start", (name) => {
    expect(failure(experiment({ v: { model: "m", weight: 1, [name]: true } }))).toBe(
      `${INVALID}functions.f.variants.v.${name}: "${name}" is protected and cannot be set by a variant`
    )
  })

  it("an unknown parameter only warns and passes through", () => {
    const settings = load(experiment({ v: { model: "m", weight: 1, safe_prompt: true } }))
    expect(settings.warnings).toEqual(["functions.f.variants.v.safe_prompt: not a known chat parameter; passed through as is"])
    expect(settings.file.functions.f.variants?.v).toEqual({ model: "m", weight: 1, safe_prompt: true })
  })

  it("the allowlist is per endpoint: voice is known for audio_speech but not for chat", () => {
    expect(warningsOf(experiment({ v: { model: "m", weight: 1, voice: "alloy", speed: 1.2 } }, "audio_speech"))).toEqual([])
    expect(warningsOf(experiment({ v: { model: "m", weight: 1, voice: "alloy" } }, "chat"))).toEqual([
      "functions.f.variants.v.voice: not a known chat parameter; passed through as is"
    ])
  })

  it.each([
    ["chat", { temperature: 0, top_p: 1, max_tokens: 10, seed: 7, stop: ["x"], response_format: { type: "json_object" } }],
    ["embeddings", { dimensions: 256, encoding_format: "float" }],
    ["audio_transcription", { language: "en", temperature: 0 }],
    ["image_generation", { size: "1024x1024", quality: "high", n: 1 }]
  ])("known %s parameters load silently", (endpoint, parameters) => {
    expect(warningsOf(experiment({ v: { model: "m", weight: 1, ...parameters } }, endpoint))).toEqual([])
  })

  it("an experiment needs at least one variant", () => {
    expect(failure(experiment({}))).toBe(`${INVALID}functions.f.variants: strategy "experiment" needs at least one variant`)
  })

  it("an experiment with models or targets stops the start", () => {
    const document = withOpenAi(["m"], {
      functions: { f: { endpoint: "chat", strategy: "experiment", models: ["m"], variants: { v: { model: "m", weight: 1 } } } }
    })
    expect(failure(document)).toBe(`${INVALID}functions.f: strategy "experiment" takes variants, not models, targets or steps`)
  })
})

describe("providers", () => {
  it("an id that is not a kind name needs kind", () => {
    expect(failure(withServer({ providers: { groq: { base_url: "https://api.groq.com/openai/v1", models: ["llama"] } } }))).toBe(
      `${INVALID}providers.groq.kind: provider "groq" is not a known kind; set kind = "openai" (any OpenAI-compatible server) or one of openai, anthropic, azure, cohere, gemini, bedrock, vertex`
    )
  })

  it("a base_url that is not http(s) stops the start", () => {
    expect(failure(withServer({ providers: { openai: { base_url: "ftp://files.example", models: [] } } }))).toBe(
      `${INVALID}providers.openai.base_url: expected an http(s) URL, got "ftp://files.example"`
    )
  })

  it("a base_url that is not a URL at all stops the start", () => {
    expect(failure(withServer({ providers: { openai: { base_url: "api.openai.com/v1", models: [] } } }))).toBe(
      `${INVALID}providers.openai.base_url: expected an http(s) URL, got "api.openai.com/v1"`
    )
  })

  it.each(["azure", "bedrock", "vertex"])("kind %s has no default base_url, so it is required", (kind) => {
    expect(failure(withServer({ providers: { [kind]: { models: [] } } }))).toBe(`${INVALID}providers.${kind}.base_url: required for kind "${kind}"`)
  })

  it("a trailing slash on base_url is dropped", () => {
    expect(load(withServer({ providers: { openai: { base_url: "http://127.0.0.1:8000/v1/", models: [] } } })).providers.get("openai")?.baseUrl).toBe(
      "http://127.0.0.1:8000/v1"
    )
  })

  it("a provider id containing :: stops the start", () => {
    expect(failure(withServer({ providers: { "a::b": { kind: "openai", base_url: "http://a.test", models: [] } } }))).toBe(`${INVALID}providers.a::b: provider ids cannot contain "::"`)
  })

  it("auth_type api_key_header on a kind without a default header needs auth_header_name", () => {
    expect(failure(withServer({ providers: { openai: { models: [], auth_type: "api_key_header" } } }))).toBe(
      `${INVALID}providers.openai.auth_header_name: required when auth_type = "api_key_header"`
    )
  })

  it("a model listed twice by one provider warns", () => {
    expect(warningsOf(withOpenAi(["m", "m"]))).toEqual(["providers.openai.models: listed twice: m"])
  })

  it("settings for a model no provider lists warn that they have no effect", () => {
    expect(warningsOf(withOpenAi(["m"], { models: { other: { timeout_ms: 1000 } } }))).toEqual([
      "models.other: no provider lists this model; the setting has no effect"
    ])
  })
})

describe("other sections", () => {
  it("anti_entropy_interval_secs <= 0 falls back to 300 with a warning", () => {
    for (const value of [0, -10]) {
      const settings = load(withServer({ tenant_routing: { anti_entropy_interval_secs: value } }))
      expect(settings.file.tenant_routing.anti_entropy_interval_secs).toBe(300)
      expect(settings.warnings).toEqual([`tenant_routing.anti_entropy_interval_secs: must be > 0, got ${value}; using 300`])
    }
  })

  it("a positive anti_entropy_interval_secs is kept", () => {
    expect(load(withServer({ tenant_routing: { anti_entropy_interval_secs: 45 } })).file.tenant_routing.anti_entropy_interval_secs).toBe(45)
  })

  it("an enabled cache with encryption and no salt stops the start", () => {
    expect(failure(withServer({ cache: { enabled: true } }))).toBe(`${INVALID}cache.encrypt_salt: must be non-empty when cache.encrypt = true`)
    expect(failure(withServer({ cache: { enabled: true, encrypt: true, encrypt_salt: "" } }))).toBe(
      `${INVALID}cache.encrypt_salt: must be non-empty when cache.encrypt = true`
    )
  })

  it("an enabled cache loads with a salt, or with encryption off (with a warning)", () => {
    expect(warningsOf(withServer({ cache: { enabled: true, encrypt_salt: "s4lt" } }))).toEqual([])
    expect(warningsOf(withServer({ cache: { enabled: true, encrypt: false } }))).toEqual([
      "cache.encrypt: false: answers are stored in clear; anyone who can read the store can read prompts' answers"
    ])
  })

  it("a disabled cache does not need a salt", () => {
    expect(warningsOf(withServer({ cache: { enabled: false, encrypt: true } }))).toEqual([])
  })

  it("an enabled cache needs a redis:// or rediss:// URL, and the message never echoes it (it may hold a password)", () => {
    for (const url of ["http://cache.internal:6379", "cache.internal:6379", "redis://", "rediss://:s3cret@"]) {
      const message = failure(withServer({ cache: { enabled: true, encrypt_salt: "s", url } }))
      expect(message).toBe(`${INVALID}cache.url: expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port`)
      expect(message).not.toContain("s3cret")
    }
    for (const url of ["redis://127.0.0.1:6379/2", "rediss://default:s3cret@cache.internal:6380"]) {
      expect(warningsOf(withServer({ cache: { enabled: true, encrypt_salt: "s", url } }))).toEqual([])
    }
    expect(warningsOf(withServer({ cache: { enabled: false, url: "http://not-checked-while-off" } }))).toEqual([])
  })

  it("a default TTL above the maximum stops the start", () => {
    expect(failure(withServer({ cache: { ttl_seconds: 100, max_ttl_seconds: 50 } }))).toBe(`${INVALID}cache.ttl_seconds: 100 exceeds cache.max_ttl_seconds (50)`)
  })

  it("routing.circuit_breaker.enabled = true loads with a deprecation warning", () => {
    expect(warningsOf(withServer({ routing: { circuit_breaker: { enabled: true } } }))).toEqual([
      `routing.circuit_breaker: deprecated and ignored; failover is sequential and stateless (strategy = "fallback")`
    ])
  })

  it("a disabled circuit breaker table is accepted silently", () => {
    expect(warningsOf(withServer({ routing: { circuit_breaker: { enabled: false, failure_threshold: 3, recovery_timeout_ms: 1000 } } }))).toEqual([])
  })

  it("auth.enabled without exchange_url stops the start", () => {
    expect(failure(withServer({ auth: { enabled: true } }))).toBe(`${INVALID}auth.exchange_url: required when auth.enabled = true`)
    expect(failure(withServer({ auth: { enabled: true, exchange_url: "" } }))).toBe(`${INVALID}auth.exchange_url: required when auth.enabled = true`)
  })

  it("auth.enabled with exchange_url loads", () => {
    expect(load(withServer({ auth: { enabled: true, exchange_url: "https://auth.example/exchange" } })).file.auth.exchange_url).toBe(
      "https://auth.example/exchange"
    )
  })

  it("every failed check is reported at once, with the warnings after them", () => {
    const message = failure(withServer({ auth: { enabled: true }, cache: { enabled: true }, routing: { circuit_breaker: { enabled: true } } }))
    expect(message.split("\n")).toEqual([
      "invalid configuration in test-gateway.toml:",
      "  - cache.encrypt_salt: must be non-empty when cache.encrypt = true",
      "  - auth.exchange_url: required when auth.enabled = true",
      "warnings:",
      `  - routing.circuit_breaker: deprecated and ignored; failover is sequential and stateless (strategy = "fallback")`
    ])
  })
})

describe("hedging settings", () => {
  const hedged = (route: Record<string, unknown>, fn?: Record<string, unknown>) =>
    withOpenAi(["a", "b"], {
      targets: { ta: { model: "a" }, tb: { model: "b" } },
      routes: { r: { endpoint: "chat", models: ["r"], ...route } },
      ...(fn === undefined ? {} : { functions: { f: { endpoint: "chat", ...fn } } })
    })

  it("hedge_after_ms on a fallback step of two targets is accepted without a warning", () => {
    expect(warningsOf(hedged({ strategy: "fallback", targets: ["ta", "tb"], hedge_after_ms: 500, max_hedges: 1 }))).toEqual([])
    expect(warningsOf(hedged({ strategy: "weighted", steps: [{ strategy: "weighted", targets: ["ta"] }, { strategy: "fallback", targets: ["ta", "tb"] }], hedge_after_ms: 500 }))).toEqual([])
  })

  it("hedge_after_ms where no step has a next target to hedge with only warns", () => {
    expect(warningsOf(hedged({ strategy: "weighted", targets: ["ta", "tb"], hedge_after_ms: 500 }))).toEqual([
      `routes.r.hedge_after_ms: ignored: hedging starts a fallback step's next target, and no step here has one (strategy "fallback" with two targets or more)`
    ])
    expect(warningsOf(hedged({ strategy: "fallback", steps: [{ strategy: "single", targets: ["ta"], hedge_after_ms: 300 }] }))).toEqual([
      `routes.r.steps[0].hedge_after_ms: ignored: hedging starts a fallback step's next target, and no step here has one (strategy "fallback" with two targets or more)`
    ])
    expect(warningsOf(hedged({ strategy: "fallback", targets: ["ta", "tb"] }, { strategy: "experiment", variants: { v: { model: "a", weight: 1 } }, hedge_after_ms: 500 }))).toEqual([
      `functions.f.hedge_after_ms: ignored: an experiment's variant has no next target to hedge with`
    ])
  })
})
