import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Random } from "effect"
import { TestClock } from "effect/testing"
import { GatewayConfig } from "../../src/config/index.ts"
import { layerTest, TestReply } from "../../src/providers/testing.ts"
import type { UpstreamCall } from "../../src/providers/transport.ts"
import { backoffDelayMs } from "../../src/routing/retry.ts"
import { simulateRequest } from "../../src/pipeline/simulate.ts"
import type { SimulatedRequest } from "../../src/pipeline/simulate.ts"
import { compileRoutingTable } from "../../src/routing/table.ts"
import { compileProvider } from "../../src/providers/adapter.ts"

const OK = TestReply.json(200, { id: "x", object: "chat.completion", choices: [] })
const SSE_OK = (call: UpstreamCall) => TestReply.chatStream(call.family === "anthropic" ? "anthropic" : "openai", ["Hello", " there"])

const tableOf = (document: Record<string, unknown>) =>
  compileRoutingTable(GatewayConfig.fromDocument({ server: {}, ...document }), compileProvider)

const providers = {
  openai: { base_url: "http://openai.test/v1", models: ["gpt-4o", "gpt-4o-mini"], credential: "none" },
  anthropic: { base_url: "http://anthropic.test", models: ["claude-sonnet-4-5"], credential: "none" },
  azure: { base_url: "http://azure.test", models: ["gpt-4o-deploy"], credential: "none" }
}

/** Runs the simulation in a fiber and advances virtual time until it finishes. */
const simulate = (
  document: Record<string, unknown>,
  request: SimulatedRequest,
  reply: (call: UpstreamCall, index: number) => TestReply,
  calls: Array<UpstreamCall> = []
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(
      simulateRequest(tableOf(document), request).pipe(Effect.provide(layerTest(reply, calls)))
    )
    for (let i = 0; i < 200 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust(1000)
    return yield* Fiber.join(fiber)
  })

describe("retries", () => {
  it.effect("retries a rate-limited target max_retries times, then fails with the last error", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        { providers, routing: { retry: { max_retries: 3, backoff_base_ms: 100 } } },
        { model: "gpt-4o" },
        () => TestReply.error(429)
      )
      assert.strictEqual(result.attempts.length, 4)
      assert.isTrue(result.outcome._tag === "Failed" && result.outcome.error.reason === "rate_limit")
    }).pipe(Random.withSeed("retries")))

  it.effect("backoff waits grow exponentially with full jitter, bounded by base × 2^n", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        { providers, routing: { retry: { max_retries: 4, backoff_base_ms: 1000 } } },
        { model: "gpt-4o" },
        () => TestReply.error(503)
      )
      const starts = result.attempts.map((attempt) => attempt.startedAtMs)
      const waits = starts.slice(1).map((start, i) => start - starts[i])
      assert.strictEqual(waits.length, 4)
      waits.forEach((wait, i) => {
        assert.isAtLeast(wait, 0)
        assert.isAtMost(wait, 1000 * 2 ** i + 1000) // TestClock advances in 1 s steps
      })
    }).pipe(Random.withSeed("backoff")))

  it("backoff delay is a uniform draw scaled by base × 2^(retry-1), or Retry-After capped at 30 s", () => {
    const policy = { maxRetries: 3, backoffBaseMs: 500 }
    assert.strictEqual(backoffDelayMs(policy, 1, undefined, 0.5), 250)
    assert.strictEqual(backoffDelayMs(policy, 2, undefined, 0.5), 500)
    assert.strictEqual(backoffDelayMs(policy, 3, undefined, 0.999), 1998)
    assert.strictEqual(backoffDelayMs(policy, 1, 7000, 0.1), 7000)
    assert.strictEqual(backoffDelayMs(policy, 1, 1500, 0.1), 1500)
    assert.strictEqual(backoffDelayMs(policy, 1, 120_000, 0.1), 30000)
  })

  it.effect("an upstream Retry-After sets the wait before the retry", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        { providers, routing: { retry: { max_retries: 1, backoff_base_ms: 10 } } },
        { model: "gpt-4o" },
        (_call, index) => (index === 0 ? TestReply.error(429, { retryAfter: 7 }) : OK)
      )
      assert.deepStrictEqual(result.attempts.map((a) => a.outcome), ["rate_limit", "ok"])
      const wait = result.attempts[1].startedAtMs - result.attempts[0].startedAtMs
      assert.isAtLeast(wait, 7000)
      assert.isBelow(wait, 8000)
    }))

  it.effect("a route's retry table overrides [routing.retry]", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        {
          providers,
          targets: { a: { model: "gpt-4o" } },
          routes: { r: { endpoint: "chat", models: ["r"], strategy: "single", targets: ["a"], retry: { max_retries: 0 } } },
          routing: { retry: { max_retries: 5 } }
        },
        { model: "r" },
        () => TestReply.error(500)
      )
      assert.strictEqual(result.attempts.length, 1)
    }))
})

describe("failover by classification", () => {
  const fallback = {
    providers,
    targets: { primary: { model: "gpt-4o" }, backup: { model: "claude-sonnet-4-5" } },
    routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "fallback", targets: ["primary", "backup"] } },
    routing: { retry: { max_retries: 1, backoff_base_ms: 10 } }
  }
  const primaryFails = (status: number, body?: unknown) => (call: UpstreamCall) =>
    call.providerId === "openai" ? TestReply.error(status, { body }) : OK

  it.effect("retryable errors (5xx) retry the same target, then fail over", () =>
    Effect.gen(function*() {
      const result = yield* simulate(fallback, { model: "smart" }, primaryFails(500))
      assert.deepStrictEqual(result.attempts.map((a) => [a.target, a.outcome]), [
        ["primary", "upstream"],
        ["primary", "upstream"],
        ["backup", "ok"]
      ])
      assert.deepStrictEqual(result.outcome, { _tag: "Served", provider: "anthropic", target: "backup", midStreamFailure: undefined })
    }))

  for (const [status, reason, body] of [
    [401, "auth", undefined],
    [403, "forbidden", undefined],
    [404, "model_not_found", undefined],
    [429, "quota", { error: { message: "quota", type: "insufficient_quota", code: "insufficient_quota" } }]
  ] as const) {
    it.effect(`${reason} moves to the next target without retrying`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(fallback, { model: "smart" }, primaryFails(status, body))
        assert.deepStrictEqual(result.attempts.map((a) => [a.target, a.outcome]), [["primary", reason], ["backup", "ok"]])
      }))
  }

  for (const [status, reason, body] of [
    [400, "bad_request", undefined],
    [400, "content_policy", { error: { message: "flagged", type: "invalid_request_error", code: "content_policy_violation" } }]
  ] as const) {
    it.effect(`${reason} stops at once: another target would fail the same way`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(fallback, { model: "smart" }, primaryFails(status, body))
        assert.strictEqual(result.attempts.length, 1)
        assert.isTrue(result.outcome._tag === "Failed" && result.outcome.error.reason === reason)
      }))
  }

  it.effect("a timeout is an upstream failure that retries and fails over", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        { ...fallback, providers: { ...providers, openai: { ...providers.openai, timeout_ms: 2000 } } },
        { model: "smart" },
        (call) => (call.providerId === "openai" ? TestReply.hang : OK)
      )
      assert.deepStrictEqual(result.attempts.map((a) => [a.target, a.outcome, a.timedOut]), [
        ["primary", "upstream", true],
        ["primary", "upstream", true],
        ["backup", "ok", undefined]
      ])
    }))

  it.effect("steps run as a fallback chain", () =>
    Effect.gen(function*() {
      const result = yield* simulate(
        {
          providers,
          targets: { a: { model: "gpt-4o" }, b: { model: "gpt-4o-mini" }, c: { model: "claude-sonnet-4-5" } },
          routes: {
            chain: {
              endpoint: "chat",
              models: ["chain"],
              strategy: "single",
              steps: [{ strategy: "fallback", targets: ["a", "b"] }, { strategy: "single", targets: ["c"] }]
            }
          },
          routing: { retry: { max_retries: 0 } }
        },
        { model: "chain" },
        (call) => (call.providerId === "openai" ? TestReply.error(502) : OK)
      )
      assert.deepStrictEqual(result.attempts.map((a) => a.target), ["a", "b", "c"])
    }))

  it.effect("nothing is retried or failed over once a stream delivered its first content", () =>
    Effect.gen(function*() {
      const result = yield* simulate(fallback, { model: "smart" }, (call) =>
        call.providerId === "openai" ? TestReply.chatStream("openai", ["a", "b"], { failAfter: 2 }) : SSE_OK(call))
      assert.strictEqual(result.attempts.length, 1)
      assert.deepStrictEqual(result.outcome, { _tag: "Served", provider: "openai", target: "primary", midStreamFailure: "upstream" })
    }))

  it.effect("a stream that breaks after its opening but before any content fails over (the gateway's commit point)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(fallback, { model: "smart" }, (call) =>
        call.providerId === "openai" ? TestReply.chatStream("openai", ["a"], { failAfter: 1 }) : SSE_OK(call))
      assert.deepStrictEqual(result.attempts.map((a) => a.target), ["primary", "primary", "backup"])
      assert.deepStrictEqual(result.outcome, { _tag: "Served", provider: "anthropic", target: "backup", midStreamFailure: undefined })
    }))

  it.effect("an error event before any content is the attempt's failure, classified like a response", () =>
    Effect.gen(function*() {
      const overloaded = TestReply.stream([
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1}}}\n\n',
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
      ])
      const result = yield* simulate({ ...fallback, routes: { smart: { ...fallback.routes.smart, targets: ["backup", "primary"] } } }, { model: "smart" }, (call) =>
        call.providerId === "anthropic" ? overloaded : SSE_OK(call))
      assert.deepStrictEqual(result.attempts.map((a) => [a.target, a.outcome]), [["backup", "overloaded"], ["backup", "overloaded"], ["primary", "ok"]])
    }))
})

describe("strategies", () => {
  const weighted = {
    providers,
    targets: { heavy: { model: "gpt-4o", weight: 3 }, light: { model: "claude-sonnet-4-5", weight: 1 } },
    routes: { w: { endpoint: "chat", models: ["w"], strategy: "weighted", targets: ["heavy", "light"] } }
  }

  it.effect("weighted draws follow the weights (chi-square over 4000 seeded draws)", () =>
    Effect.gen(function*() {
      const table = tableOf(weighted)
      const counts: Record<string, number> = { heavy: 0, light: 0 }
      const layer = layerTest(() => OK)
      for (let i = 0; i < 4000; i++) {
        const result = yield* simulateRequest(table, { model: "w" }).pipe(Effect.provide(layer))
        if (result.outcome._tag === "Served") counts[result.outcome.target]++
      }
      const expected = { heavy: 3000, light: 1000 }
      const chiSquare = (counts.heavy - expected.heavy) ** 2 / expected.heavy + (counts.light - expected.light) ** 2 / expected.light
      assert.isBelow(chiSquare, 10.83) // p = 0.001, one degree of freedom
    }).pipe(Random.withSeed("weighted")))

  const experiment = {
    providers,
    functions: {
      summarize: {
        endpoint: "chat",
        strategy: "experiment",
        variants: {
          fast: { model: "gpt-4o-mini", weight: 1, temperature: 0.2 },
          careful: { model: "claude-sonnet-4-5", weight: 1, max_tokens: 1024 }
        }
      }
    }
  }

  it.effect("an experiment key always gets the same variant", () =>
    Effect.gen(function*() {
      const table = tableOf(experiment)
      const layer = layerTest(() => OK)
      const variants = new Set<string | undefined>()
      for (let i = 0; i < 20; i++) {
        const result = yield* simulateRequest(table, { model: "function::summarize", experimentKey: "user-42" }).pipe(Effect.provide(layer))
        variants.add(result.variant)
      }
      assert.strictEqual(variants.size, 1)
      // Different keys spread over both variants.
      const spread = new Set<string | undefined>()
      for (let i = 0; i < 50; i++) {
        const result = yield* simulateRequest(table, { model: "function::summarize", experimentKey: `user-${i}` }).pipe(Effect.provide(layer))
        spread.add(result.variant)
      }
      assert.strictEqual(spread.size, 2)
    }))

  it.effect("a variant's extra keys override the request's parameters", () =>
    Effect.gen(function*() {
      const table = tableOf(experiment)
      const layer = layerTest(() => OK)
      for (let i = 0; i < 30; i++) {
        const result = yield* simulateRequest(table, {
          model: "function::summarize",
          experimentKey: `k${i}`,
          body: { model: "function::summarize", temperature: 1, max_tokens: 10 }
        }).pipe(Effect.provide(layer))
        if (result.variant === "fast") assert.deepStrictEqual([result.body.temperature, result.body.model, result.body.max_tokens], [0.2, "gpt-4o-mini", 10])
        else assert.deepStrictEqual([result.body.temperature, result.body.model, result.body.max_tokens], [1, "claude-sonnet-4-5", 1024])
      }
    }))
})

describe("targets that cannot serve a request", () => {
  const document = {
    providers,
    targets: { claude: { model: "claude-sonnet-4-5" }, gpt: { model: "gpt-4o" } },
    routes: { json: { endpoint: "chat", models: ["json"], strategy: "fallback", targets: ["claude", "gpt"] } }
  }
  it.effect("a messages-style target is skipped for a JSON response_format, as in the gateway", () =>
    Effect.gen(function*() {
      const result = yield* simulate(document, { model: "json", body: { model: "json", response_format: { type: "json_object" } } }, () => OK)
      assert.deepStrictEqual(result.attempts.map((a) => a.target), ["gpt"])
    }))
  it.effect("with no target left the request fails with the reason", () =>
    Effect.gen(function*() {
      const failure = yield* simulateRequest(tableOf(document), { model: "claude-sonnet-4-5", body: { response_format: { type: "json_schema" } } }).pipe(
        Effect.provide(layerTest(() => OK)),
        Effect.flip
      )
      assert.strictEqual(failure.code, "unsupported_response_format")
    }))
})
