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

describe("[limits]", () => {
  it("defaults to allowing requests when the store is unreachable; a URL that is not Redis is refused without echo", () => {
    expect(load(withOpenAi(["gpt-4o"])).file.limits).toMatchObject({ on_store_error: "allow" })
    const message = failure(withOpenAi(["gpt-4o"], { limits: { url: "http://user:pw-secret@127.0.0.1:6379" } }))
    expect(message).toContain("limits.url")
    expect(message).not.toContain("pw-secret")
    expect(failure(withOpenAi(["gpt-4o"], { limits: { on_store_error: "maybe" } }))).toContain("limits.on_store_error")
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
