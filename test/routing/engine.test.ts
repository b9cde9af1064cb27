/**
 * The routing engine as a caller sees it: each test sends a request through
 * the gateway's own program (src/testing.ts, as docs/testing-your-routing.md
 * shows) against scripted providers on virtual time, and reads the upstream
 * calls it made and the answer it gave.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Random } from "effect"
import { TestClock } from "effect/testing"
import { backoffDelayMs } from "../../src/routing/retry.ts"
import { routingFromConfig, routingGateway, scriptedProviders, sendRequest, TestReply } from "../../src/testing.ts"
import type { RoutingRequest, RoutingUnderTest, UpstreamCall } from "../../src/testing.ts"

/** A complete answer in the provider's own format. */
const OK = (call: UpstreamCall) =>
  call.family === "anthropic"
    ? TestReply.json(200, { id: "msg_x", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } })
    : TestReply.json(200, { id: "x", object: "chat.completion", created: 0, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }] })
const SSE_OK = (call: UpstreamCall) => TestReply.chatStream(call.family === "anthropic" ? "anthropic" : "openai", ["Hello", " there"])

const providers = {
  openai: { base_url: "http://openai.test/v1", models: ["gpt-4o", "gpt-4o-mini"], credential: "none" },
  anthropic: { base_url: "http://anthropic.test", models: ["claude-sonnet-4-5"], credential: "none" },
  azure: { base_url: "http://azure.test", models: ["gpt-4o-deploy"], credential: "none" }
}

/** Sends the request in a fiber and advances virtual time until it finishes. */
const route = (
  routing: RoutingUnderTest | Record<string, unknown>,
  request: RoutingRequest,
  reply: (call: UpstreamCall, index: number) => TestReply
) =>
  Effect.gen(function*() {
    const compiled = "options" in routing ? routing as RoutingUnderTest : routingFromConfig(routing)
    const fiber = yield* Effect.forkChild(sendRequest(compiled, request).pipe(Effect.provide(scriptedProviders(reply))))
    for (let i = 0; i < 200 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust(1000)
    return yield* Fiber.join(fiber)
  })

const errorCode = (body: unknown): unknown => (body as { error?: { code?: unknown } }).error?.code

describe("retries", () => {
  it.effect("retries a rate-limited target max_retries times, then fails with the last error", () =>
    Effect.gen(function*() {
      const answer = yield* route(
        { providers, routing: { retry: { max_retries: 3, backoff_base_ms: 100 } } },
        { model: "gpt-4o" },
        () => TestReply.error(429)
      )
      assert.strictEqual(answer.calls.length, 4)
      assert.strictEqual(answer.status, 429)
    }).pipe(Random.withSeed("retries")))

  it.effect("backoff waits grow exponentially with full jitter, bounded by base × 2^n", () =>
    Effect.gen(function*() {
      const answer = yield* route(
        { providers, routing: { retry: { max_retries: 4, backoff_base_ms: 1000 } } },
        { model: "gpt-4o" },
        () => TestReply.error(503)
      )
      const starts = answer.calls.map((call) => call.atMs)
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
      const answer = yield* route(
        { providers, routing: { retry: { max_retries: 1, backoff_base_ms: 10 } } },
        { model: "gpt-4o" },
        (call, index) => (index === 0 ? TestReply.error(429, { retryAfter: 7 }) : OK(call))
      )
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.calls.length, 2)
      const wait = answer.calls[1].atMs - answer.calls[0].atMs
      assert.isAtLeast(wait, 7000)
      assert.isBelow(wait, 8000)
    }))

  it.effect("a route's retry table overrides [routing.retry]", () =>
    Effect.gen(function*() {
      const answer = yield* route(
        {
          providers,
          targets: { a: { model: "gpt-4o" } },
          routes: { r: { endpoint: "chat", models: ["r"], strategy: "single", targets: ["a"], retry: { max_retries: 0 } } },
          routing: { retry: { max_retries: 5 } }
        },
        { model: "r" },
        () => TestReply.error(500)
      )
      assert.strictEqual(answer.calls.length, 1)
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
    call.providerId === "openai" ? TestReply.error(status, { body }) : OK(call)

  it.effect("retryable errors (5xx) retry the same target, then fail over", () =>
    Effect.gen(function*() {
      const answer = yield* route(fallback, { model: "smart" }, primaryFails(500))
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "openai", "anthropic"])
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
    }))

  for (const [status, reason, body] of [
    [401, "auth", undefined],
    [403, "forbidden", undefined],
    [404, "model_not_found", undefined],
    [429, "quota", { error: { message: "quota", type: "insufficient_quota", code: "insufficient_quota" } }]
  ] as const) {
    it.effect(`${reason} moves to the next target without retrying`, () =>
      Effect.gen(function*() {
        const answer = yield* route(fallback, { model: "smart" }, primaryFails(status, body))
        assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "anthropic"])
        assert.strictEqual(answer.status, 200)
      }))
  }

  for (const [status, reason, body] of [
    [400, "bad_request", undefined],
    [400, "content_policy", { error: { message: "flagged", type: "invalid_request_error", code: "content_policy_violation" } }]
  ] as const) {
    it.effect(`${reason} stops at once: another target would fail the same way`, () =>
      Effect.gen(function*() {
        const answer = yield* route(fallback, { model: "smart" }, primaryFails(status, body))
        assert.strictEqual(answer.calls.length, 1)
        assert.strictEqual(answer.status, 400)
        assert.strictEqual(answer.headers["x-gw-error-code"], reason)
      }))
  }

  it.effect("a timeout is an upstream failure that retries and fails over", () =>
    Effect.gen(function*() {
      const answer = yield* route(
        { ...fallback, providers: { ...providers, openai: { ...providers.openai, timeout_ms: 2000 } } },
        { model: "smart" },
        (call) => (call.providerId === "openai" ? TestReply.hang : OK(call))
      )
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "openai", "anthropic"])
      // Each hung attempt ends at its 2 s timeout, not before.
      assert.isAtLeast(answer.calls[1].atMs - answer.calls[0].atMs, 2000)
      assert.isAtLeast(answer.calls[2].atMs - answer.calls[1].atMs, 2000)
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
    }))

  it.effect("steps run as a fallback chain", () =>
    Effect.gen(function*() {
      const answer = yield* route(
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
        (call) => (call.providerId === "openai" ? TestReply.error(502) : OK(call))
      )
      assert.deepStrictEqual(answer.calls.map((call) => call.model), ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5"])
    }))

  it.effect("nothing is retried or failed over once a stream delivered its first content", () =>
    Effect.gen(function*() {
      const answer = yield* route(fallback, { model: "smart", stream: true }, (call) =>
        call.providerId === "openai" ? TestReply.chatStream("openai", ["a", "b"], { failAfter: 2 }) : SSE_OK(call))
      assert.strictEqual(answer.calls.length, 1)
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "openai")
      // The break reaches the caller as the stream's in-band error frame.
      assert.include(String(answer.body), "\"error\"")
    }))

  it.effect("a stream that breaks after its opening but before any content fails over (the gateway's commit point)", () =>
    Effect.gen(function*() {
      const answer = yield* route(fallback, { model: "smart", stream: true }, (call) =>
        call.providerId === "openai" ? TestReply.chatStream("openai", ["a"], { failAfter: 1 }) : SSE_OK(call))
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "openai", "anthropic"])
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
      assert.notInclude(String(answer.body), "\"error\"")
    }))

  it.effect("an error event before any content is the attempt's failure, classified like a response", () =>
    Effect.gen(function*() {
      const overloaded = TestReply.stream([
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
      ])
      const answer = yield* route(
        { ...fallback, routes: { smart: { ...fallback.routes.smart, targets: ["backup", "primary"] } } },
        { model: "smart", stream: true },
        (call) => call.providerId === "anthropic" ? overloaded : SSE_OK(call)
      )
      // Overloaded is retryable: the same target once more, then the next.
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["anthropic", "anthropic", "openai"])
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "openai")
    }))
})

describe("strategies", () => {
  const weighted = routingFromConfig({
    providers,
    targets: { heavy: { model: "gpt-4o", weight: 3 }, light: { model: "claude-sonnet-4-5", weight: 1 } },
    routes: { w: { endpoint: "chat", models: ["w"], strategy: "weighted", targets: ["heavy", "light"] } }
  })

  it.effect("weighted draws follow the weights (chi-square over 4000 seeded draws)", () =>
    Effect.gen(function*() {
      const counts: Record<string, number> = { openai: 0, anthropic: 0 }
      for (let i = 0; i < 4000; i++) {
        const answer = yield* sendRequest(weighted, { model: "w" })
        counts[answer.headers["x-gw-upstream-provider"]]++
      }
      const expected = { openai: 3000, anthropic: 1000 }
      const chiSquare = (counts.openai - expected.openai) ** 2 / expected.openai + (counts.anthropic - expected.anthropic) ** 2 / expected.anthropic
      assert.isBelow(chiSquare, 10.83) // p = 0.001, one degree of freedom
    }).pipe(Effect.provide(routingGateway(weighted)), Effect.provide(scriptedProviders(OK)), Random.withSeed("weighted")))

  const experiment = routingFromConfig({
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
  })
  const keyed = (key: string, body?: Record<string, unknown>) =>
    sendRequest(experiment, { model: "function::summarize", headers: { "x-gw-experiment-key": key }, body }).pipe(Effect.provide(scriptedProviders(OK)))

  it.effect("an experiment key always gets the same variant", () =>
    Effect.gen(function*() {
      const variants = new Set<string | undefined>()
      for (let i = 0; i < 20; i++) variants.add((yield* keyed("user-42")).headers["x-gw-variant"])
      assert.strictEqual(variants.size, 1)
      // Different keys spread over both variants.
      const spread = new Set<string | undefined>()
      for (let i = 0; i < 50; i++) spread.add((yield* keyed(`user-${i}`)).headers["x-gw-variant"])
      assert.strictEqual(spread.size, 2)
    }))

  it.effect("a variant's extra keys override the request's parameters", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 30; i++) {
        const answer = yield* keyed(`k${i}`, { messages: [{ role: "user", content: "Hi" }], temperature: 1, max_tokens: 10 })
        const sent = answer.calls[0].body as Record<string, unknown>
        if (answer.headers["x-gw-variant"] === "fast") assert.deepStrictEqual([sent.temperature, sent.model, sent.max_tokens], [0.2, "gpt-4o-mini", 10])
        else assert.deepStrictEqual([sent.temperature, sent.model, sent.max_tokens], [1, "claude-sonnet-4-5", 1024])
      }
    }))
})

describe("targets that cannot serve a request", () => {
  const document = {
    providers,
    targets: { claude: { model: "claude-sonnet-4-5" }, gpt: { model: "gpt-4o" } },
    routes: { json: { endpoint: "chat", models: ["json"], strategy: "fallback", targets: ["claude", "gpt"] } }
  }
  const asking = (type: string) => ({
    messages: [{ role: "user", content: "Hi" }],
    response_format: type === "json_schema" ? { type, json_schema: { name: "answer", schema: { type: "object" } } } : { type }
  })

  it.effect("a messages-style target is skipped for a JSON response_format, as in the gateway", () =>
    Effect.gen(function*() {
      const answer = yield* route(document, { model: "json", body: asking("json_object") }, OK)
      assert.deepStrictEqual(answer.calls.map((call) => call.model), ["gpt-4o"])
    }))

  it.effect("with no target left the request fails with the reason", () =>
    Effect.gen(function*() {
      const answer = yield* route(document, { model: "claude-sonnet-4-5", body: asking("json_schema") }, OK)
      assert.strictEqual(answer.status, 400)
      assert.strictEqual(errorCode(answer.body), "unsupported_response_format")
      assert.deepStrictEqual(answer.calls, [])
    }))
})
