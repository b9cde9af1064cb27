/**
 * `ttft_ms` on virtual time: a stream with no content in time fails as a
 * timeout before anything reached the caller, so routing fails over (or
 * retries); a role-only chunk, `message_start` or `content_block_start` is
 * not content; where it is set (target, step, route, function, model,
 * provider, `[defaults.provider]`) and which wins.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { routingFromToml, TestReply } from "../../src/testing.ts"
import type { RoutedAnswer, UpstreamCall } from "../../src/testing.ts"
import { sendAfter, smartTable } from "./on-test-clock.ts"
import type { SmartLayout } from "./on-test-clock.ts"

/** Where each level's `ttft_ms` goes (TOML lines under that table), and the route's shape. */
interface Layout extends SmartLayout {
  readonly defaults?: string
  readonly openai?: string
  readonly model?: string
}

/** Two providers, a target on each, and `smart` falling back from one to the other. */
const smart = (layout: Layout = {}) => {
  return routingFromToml(`
[defaults.provider]
${layout.defaults ?? ""}

[providers.openai]
models = ["gpt-4o"]
${layout.openai ?? ""}

[providers.anthropic]
models = ["claude-sonnet-4-5"]

[models.gpt-4o]
${layout.model ?? ""}

[targets.primary]
model = "gpt-4o"
${layout.primary ?? ""}

[targets.backup]
model = "claude-sonnet-4-5"

${smartTable(layout, '["primary", "backup"]')}`)
}

/** OpenAI stalls after its role-only chunk; Anthropic answers at once. */
const stallingOpenAi = (call: UpstreamCall) =>
  call.providerId === "openai" ? TestReply.chatStream("openai", ["from OpenAI"], { stallAfter: 1 }) : TestReply.chatStream("anthropic", ["from Claude"])

const streamed = sendAfter

const callsOf = (answer: RoutedAnswer) => answer.calls.map((call) => [call.provider, call.atMs])

describe("ttft_ms: a slow first token fails over before the commit", () => {
  it.effect("a route's ttft_ms: the stream that sent only its role chunk is given up at 1000 ms, the next target answers", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(smart({ route: "ttft_ms = 1000" }), stallingOpenAi, 5_000)
      assert.deepStrictEqual(callsOf(answer), [["openai", 0], ["anthropic", 1000]])
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
      const text = String(answer.body)
      assert.include(text, "from Claude")
      assert.notInclude(text, "from OpenAI")
      assert.notInclude(text, "error")
    }))

  it.effect("Anthropic's message_start and content_block_start are not content either", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(
        smart({ targets: "targets = [\"backup\", \"primary\"]", route: "ttft_ms = 700" }),
        (call) => call.providerId === "anthropic" ? TestReply.chatStream("anthropic", ["late"], { stallAfter: 2 }) : TestReply.chatStream("openai", ["on time"]),
        5_000
      )
      assert.deepStrictEqual(callsOf(answer), [["anthropic", 0], ["openai", 700]])
      assert.include(String(answer.body), "on time")
    }))

  it.effect("a slow head counts too: no response within ttft_ms fails over long before timeout_ms", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(
        smart({ route: "ttft_ms = 500" }),
        (call) => call.providerId === "openai" ? TestReply.delay(3_000, TestReply.chatStream("openai", ["slow"])) : TestReply.chatStream("anthropic", ["fast"]),
        10_000
      )
      assert.deepStrictEqual(callsOf(answer), [["openai", 0], ["anthropic", 500]])
      assert.include(String(answer.body), "fast")
    }))

  it.effect("content in time is the answer: one call, no failover", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(
        smart({ route: "ttft_ms = 1000" }),
        (call) => call.providerId === "openai" ? TestReply.delay(900, TestReply.chatStream("openai", ["just in time"])) : TestReply.chatStream("anthropic", ["unused"]),
        5_000
      )
      assert.deepStrictEqual(callsOf(answer), [["openai", 0]])
      assert.include(String(answer.body), "just in time")
    }))

  it.effect("the timeout is retryable: the same target is tried again per the retry schedule", () =>
    Effect.gen(function*() {
      let openAiCalls = 0
      const answer = yield* streamed(
        smart({ route: "ttft_ms = 1000", retries: 1 }),
        (call) => {
          if (call.providerId !== "openai") return TestReply.chatStream("anthropic", ["unused"])
          return ++openAiCalls === 1 ? TestReply.chatStream("openai", ["stalled"], { stallAfter: 1 }) : TestReply.chatStream("openai", ["second try"])
        },
        10_000
      )
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "openai"])
      assert.isAtLeast(answer.calls[1].atMs, 1000)
      assert.include(String(answer.body), "second try")
    }))

  it.effect("a request that does not stream is not timed by ttft_ms", () =>
    Effect.gen(function*() {
      const completion = {
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 0,
        model: "gpt-4o",
        choices: [{ index: 0, message: { role: "assistant", content: "whole answer" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
      }
      const answer = yield* streamed(
        smart({ route: "ttft_ms = 500" }),
        (call) => call.providerId === "openai" ? TestReply.delay(2_000, TestReply.json(200, completion)) : TestReply.json(500, {}),
        5_000,
        false
      )
      assert.deepStrictEqual(callsOf(answer), [["openai", 0]])
      assert.strictEqual(answer.status, 200)
    }))
})

describe("ttft_ms: where it is set, the most specific wins", () => {
  /** The moment the gateway gave up on the stalled OpenAI stream (when Anthropic was called). */
  const gaveUpAt = (layout: Layout) =>
    Effect.map(streamed(smart(layout), stallingOpenAi, 60_000), (answer) => {
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
      return answer.calls[1].atMs
    })
  const ttft = (ms: number) => `ttft_ms = ${ms}`
  const steps = (ms: number) => `steps = [{ strategy = "fallback", targets = ["primary", "backup"], ttft_ms = ${ms} }]`

  it.effect("[defaults.provider], then the provider, then the model", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* gaveUpAt({ defaults: ttft(4000) }), 4000)
      assert.strictEqual(yield* gaveUpAt({ defaults: ttft(4000), openai: ttft(3000) }), 3000)
      assert.strictEqual(yield* gaveUpAt({ defaults: ttft(4000), openai: ttft(3000), model: ttft(2000) }), 2000)
    }))

  it.effect("a route's value wins over the model's; a step's over the route's; the target's own over both", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* gaveUpAt({ model: ttft(2000), route: ttft(1500) }), 1500)
      assert.strictEqual(yield* gaveUpAt({ model: ttft(2000), route: ttft(1500), targets: steps(1200) }), 1200)
      assert.strictEqual(yield* gaveUpAt({ model: ttft(2000), route: ttft(1500), targets: steps(1200), primary: ttft(800) }), 800)
    }))

  it.effect("a function's value applies to its targets, and its steps' over it", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* gaveUpAt({ table: "functions", route: ttft(900) }), 900)
      assert.strictEqual(yield* gaveUpAt({ table: "functions", route: ttft(900), targets: steps(600) }), 600)
    }))

  it("a ttft_ms that is not a positive integer is refused, naming the field", () => {
    assert.throws(() => smart({ route: ttft(0) }), /routes\.smart\.ttft_ms/)
    assert.throws(() => smart({ defaults: ttft(-5) }), /defaults\.provider\.ttft_ms/)
    assert.throws(() => smart({ model: "ttft_ms = 1.5" }), /models\.gpt-4o\.ttft_ms/)
  })
})
