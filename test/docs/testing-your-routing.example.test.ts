import { assert, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { routingFromToml, scriptedProviders, simulateRequest, TestReply } from "../../src/testing.ts"
import type { UpstreamCall } from "../../src/testing.ts"

// 1. Your configuration, as in config/gateway.toml.
const routing = routingFromToml(`
[server]

[providers.openai]
models = ["gpt-4o"]

[providers.anthropic]
models = ["claude-sonnet-4-5"]

[targets.primary]
model = "gpt-4o"

[targets.backup]
model = "claude-sonnet-4-5"

[routes.smart]
endpoint = "chat"
models = ["smart"]
strategy = "fallback"
targets = ["primary", "backup"]

[routes.smart.retry]
max_retries = 2
backoff_base_ms = 1000
`)

it.effect("smart falls back to Anthropic when OpenAI keeps rate-limiting", () =>
  Effect.gen(function*() {
    // 2. Script the providers: OpenAI answers 429 (Retry-After: 5), Anthropic succeeds.
    const calls: Array<UpstreamCall> = []
    const providers = scriptedProviders(
      (call) => call.providerId === "openai" ? TestReply.error(429, { retryAfter: 5 }) : TestReply.json(200, { id: "msg_1" }),
      calls
    )

    // 3. Run the request on virtual time: start it, then move the clock past the waits.
    const fiber = yield* simulateRequest(routing, { model: "smart" }).pipe(Effect.provide(providers), Effect.forkChild)
    yield* TestClock.adjust("20 seconds")
    const result = yield* Fiber.join(fiber)

    // 4. Assert what your users would see.
    assert.deepStrictEqual(result.attempts.map((a) => [a.target, a.outcome, a.startedAtMs]), [
      ["primary", "rate_limit", 0],
      ["primary", "rate_limit", 5000], // Retry-After honoured
      ["primary", "rate_limit", 10000],
      ["backup", "ok", 10000]
    ])
    assert.deepStrictEqual(result.outcome, { _tag: "Served", provider: "anthropic", target: "backup", midStreamFailure: undefined })
    assert.strictEqual(calls.length, 4)
  }))
