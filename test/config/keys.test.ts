/**
 * `[keys]` and `[limits]` validation (what `check-config` and the start
 * report): keys come from the environment and are kept as their SHA-256,
 * never in clear; a literal key, an unset variable, a key shared by two names,
 * keys beside `[auth]`, bad limits and a bad limits URL are refused with the
 * path named and no key echoed.
 */
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { redactedView } from "../../src/config/index.ts"
import { failure, load, warningsOf, withOpenAi } from "./support.ts"

const KEY = "gwk-config-test-key-3f9a0c"
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

describe("[keys]", () => {
  it("a key is read from its variable and held as its SHA-256 only, with its globs and limits", () => {
    const settings = load(withOpenAi(["gpt-4o"], {
      keys: { team: { key: "env::TEAM_KEY", project_id: "p1", models: ["gpt-*"], requests_per_minute: 10, tokens_per_minute: 5000, concurrent_requests: 2, budget_usd_per_day: 1.5 } }
    }), { TEAM_KEY: KEY })
    expect(settings.keys).toEqual([{
      name: "team",
      digest: sha256(KEY),
      projectId: "p1",
      models: ["gpt-*"],
      routes: undefined,
      functions: undefined,
      limits: { requests_per_minute: 10, tokens_per_minute: 5000, concurrent_requests: 2, budget_usd_per_day: 1.5 }
    }])
    expect(JSON.stringify(settings.keys)).not.toContain(KEY)
    expect(JSON.stringify(redactedView(settings))).not.toContain(KEY)
  })

  it("a literal key is refused without being echoed; an unset variable is refused by name", () => {
    const literal = failure(withOpenAi(["gpt-4o"], { keys: { team: { key: KEY } } }))
    expect(literal).toContain("keys.team.key")
    expect(literal).not.toContain(KEY)
    expect(failure(withOpenAi(["gpt-4o"], { keys: { team: { key: "env::UNSET_TEAM_KEY" } } }))).toContain("keys.team.key: env::UNSET_TEAM_KEY is not set")
    expect(failure(withOpenAi(["gpt-4o"], { keys: { team: { key: "none" } } }))).toContain("keys.team.key")
  })

  it("two names with the same key are refused, naming both and neither key", () => {
    const message = failure(withOpenAi(["gpt-4o"], { keys: { a: { key: "env::A_KEY" }, b: { key: "env::B_KEY" } } }), { A_KEY: KEY, B_KEY: KEY })
    expect(message).toContain("keys.b.key: the same key as keys.a")
    expect(message).not.toContain(KEY)
  })

  it("[keys] beside [auth] is refused at start, naming the two", () => {
    const message = failure(withOpenAi(["gpt-4o"], {
      keys: { team: { key: "env::TEAM_KEY" } },
      auth: { enabled: true, exchange_url: "http://127.0.0.1:9/exchange" }
    }), { TEAM_KEY: KEY })
    expect(message).toMatch(/keys: .*\[auth\].*x-gw-authorization/)
  })

  it("limits must be positive; an unknown key field is named", () => {
    const message = failure(withOpenAi(["gpt-4o"], { keys: { team: { key: "env::TEAM_KEY", requests_per_minute: 0, budget_usd_per_day: -1 } } }), { TEAM_KEY: KEY })
    expect(message).toContain("keys.team.requests_per_minute")
    expect(message).toContain("keys.team.budget_usd_per_day")
    expect(warningsOf(withOpenAi(["gpt-4o"], { keys: { team: { key: "env::TEAM_KEY", request_per_minute: 5 } } }), { TEAM_KEY: KEY })).toEqual([
      "keys.team.request_per_minute: unknown key; did you mean \"requests_per_minute\"?"
    ])
  })
})

describe("prices", () => {
  it("a model priced in [models] overrides the shipped table field by field; half a price warns", async () => {
    const { modelPrice, SHIPPED_PRICES } = await import("../../src/config/index.ts")
    const settings = load(withOpenAi(["gpt-5", "mine"], { models: { "gpt-5": { output_per_mtok: 12 }, mine: { input_per_mtok: 1, output_per_mtok: 2 } } }))
    expect(modelPrice(settings.file.models, "gpt-5")).toEqual({ input: SHIPPED_PRICES["gpt-5"].input, output: 12, cacheRead: SHIPPED_PRICES["gpt-5"].cacheRead, cacheWrite: SHIPPED_PRICES["gpt-5"].input })
    expect(modelPrice(settings.file.models, "mine")).toEqual({ input: 1, output: 2, cacheRead: 1, cacheWrite: 1 })
    expect(modelPrice(settings.file.models, "unpriced")).toBeUndefined()
    expect(warningsOf(withOpenAi(["half"], { models: { half: { input_per_mtok: 1 } } }))).toEqual([
      "models.half: has a price but not both input_per_mtok and output_per_mtok; its requests have no cost"
    ])
    expect(failure(withOpenAi(["neg"], { models: { neg: { input_per_mtok: -1, output_per_mtok: 1 } } }))).toContain("models.neg.input_per_mtok")
  })

  it("the shipped table prices every token-priced chat and embedding model of the shipped configuration", async () => {
    const { loadSettings, SHIPPED_PRICES } = await import("../../src/config/index.ts")
    const { Result } = await import("effect")
    const shipped = Result.getOrThrow(loadSettings("config/gateway.toml", {}))
    const models = [...shipped.providers.values()].flatMap((provider) => provider.models)
    const unpriced = models.filter((model) => !Object.hasOwn(SHIPPED_PRICES, model))
    // Images, speech and transcription are priced per image, character or minute, not per token.
    expect(unpriced.sort()).toEqual(["gpt-image-1", "tts-1", "whisper-1"])
  })
})

describe("[limits]", () => {
  it("defaults to allowing requests when the store is unreachable; a URL that is not Redis is refused without echo", () => {
    expect(load(withOpenAi(["gpt-4o"])).file.limits).toMatchObject({ on_store_error: "allow" })
    const message = failure(withOpenAi(["gpt-4o"], { limits: { url: "http://user:pw-secret@127.0.0.1:6379" } }))
    expect(message).toContain("limits.url")
    expect(message).not.toContain("pw-secret")
    expect(failure(withOpenAi(["gpt-4o"], { limits: { on_store_error: "maybe" } }))).toContain("limits.on_store_error")
  })

  it("a tenant snapshot carries its project's own limits (project_limits), validated like a key's", async () => {
    const { snapshotFromDocument } = await import("../../src/config/index.ts")
    const good = snapshotFromDocument({ version: 1, project_limits: { requests_per_minute: 30, budget_usd_per_month: 100 } }, "snap")
    expect(good._tag === "Success" ? good.success.limits : undefined).toEqual({ requests_per_minute: 30, budget_usd_per_month: 100 })
    const none = snapshotFromDocument({ version: 1 }, "snap")
    expect(none._tag === "Success" ? none.success.limits : undefined).toEqual({})
    const bad = snapshotFromDocument({ version: 1, project_limits: { concurrent_requests: 0 } }, "snap")
    expect(bad._tag === "Failure" ? bad.failure.error.message : "").toContain("project_limits.concurrent_requests")
  })

  it("a tenant snapshot may not carry [keys] or [limits]", async () => {
    const { snapshotFromDocument } = await import("../../src/config/index.ts")
    const result = snapshotFromDocument({ version: 1, keys: { a: { key: "env::X" } }, limits: {} }, "snap")
    expect(result._tag).toBe("Failure")
    const message = result._tag === "Failure" ? result.failure.error.message : ""
    expect(message).toContain("keys: not allowed in a snapshot")
    expect(message).toContain("limits: not allowed in a snapshot")
  })
})
