/**
 * `on_stream_break` on virtual time: a committed stream that goes silent
 * until its idle timeout, or breaks, is continued on the next target when
 * set to "continue"; where it is set (target, step, route, function) and
 * which wins; "error" (the default) keeps the error frame.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { routingFromToml, scriptedProviders, sendRequest, TestReply } from "../../src/testing.ts"
import type { RoutingUnderTest, UpstreamCall } from "../../src/testing.ts"
import { smartTable } from "./on-test-clock.ts"
import type { SmartLayout } from "./on-test-clock.ts"

type Layout = SmartLayout

/** Two providers, a target on each, and `smart` falling back from OpenAI to Anthropic; OpenAI's idle timeout is 2 s. */
const smart = (layout: Layout = {}) => {
  return routingFromToml(`
[providers.openai]
models = ["gpt-4o"]
timeout_ms = 2000

[providers.anthropic]
models = ["claude-sonnet-4-5"]

[targets.primary]
model = "gpt-4o"
${layout.primary ?? ""}

[targets.backup]
model = "claude-sonnet-4-5"

${smartTable(layout, '["primary", "backup"]')}`)
}

/** OpenAI sends its role chunk and "Hello " then goes silent; Anthropic continues. */
const stallingOpenAi = (call: UpstreamCall) =>
  call.providerId === "openai" ? TestReply.chatStream("openai", ["Hello ", "never sent"], { stallAfter: 2 }) : TestReply.chatStream("anthropic", ["world."])

/** Sends a streamed request to `smart`, moves the clock `advance` ms on, and joins it. */
const streamed = (routing: RoutingUnderTest, handler: (call: UpstreamCall) => TestReply, advance = 10_000) =>
  Effect.gen(function*() {
    const fiber = yield* sendRequest(routing, { model: "smart", stream: true }).pipe(Effect.provide(scriptedProviders(handler)), Effect.forkChild)
    // In steps: the idle watch of a stream starts only once its head arrived.
    for (let step = 0; step < 10; step++) yield* TestClock.adjust(advance / 10)
    return yield* Fiber.join(fiber)
  })

/** The text of an OpenAI event stream's content deltas. */
const contentOf = (body: unknown): string =>
  String(body)
    .split("\n\n")
    .filter((frame) => frame.startsWith("data: {"))
    .map((frame) => JSON.parse(frame.slice(6)))
    .map((chunk) => chunk.choices?.[0]?.delta?.content ?? "")
    .join("")

describe("on_stream_break = \"continue\": a stream that stalls after its first content", () => {
  it.effect("goes on on the next target once the idle timeout ran out: the whole text once, one finish, no error", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(smart({ route: "on_stream_break = \"continue\"" }), stallingOpenAi)
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai", "anthropic"])
      // Continued once the (virtual) idle timeout had run out, not before.
      assert.isAtLeast(answer.calls[1].atMs, 2000)
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(contentOf(answer.body), "Hello world.")
      assert.notInclude(String(answer.body), "error")
      assert.strictEqual(String(answer.body).split("\"finish_reason\":\"stop\"").length, 2)
      // The continuation asks Anthropic with the text so far as a prefill (its trailing space left out).
      const messages = (answer.calls[1].body as { messages: Array<unknown> }).messages
      assert.deepStrictEqual(messages.at(-1), { role: "assistant", content: [{ type: "text", text: "Hello" }] })
    }))

  it.effect("without it the stall ends with the error frame at the idle timeout", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(smart(), stallingOpenAi)
      assert.deepStrictEqual(answer.calls.map((call) => call.provider), ["openai"])
      assert.strictEqual(contentOf(answer.body), "Hello ")
      assert.include(String(answer.body), "\"error\"")
    }))

  it.effect("a reset after content is continued the same way", () =>
    Effect.gen(function*() {
      const answer = yield* streamed(
        smart({ route: "on_stream_break = \"continue\"" }),
        (call) => call.providerId === "openai" ? TestReply.chatStream("openai", ["Hello "], { failAfter: 2 }) : TestReply.chatStream("anthropic", ["world."]),
        0
      )
      assert.strictEqual(contentOf(answer.body), "Hello world.")
    }))
})

describe("on_stream_break: where it is set, the most specific wins", () => {
  /** Whether the stalled stream was continued (Anthropic called) under `layout`. */
  const continued = (layout: Layout) => Effect.map(streamed(smart(layout), stallingOpenAi), (answer) => answer.calls.length === 2)
  const on = "on_stream_break = \"continue\""
  const off = "on_stream_break = \"error\""
  const steps = (value: string) => `steps = [{ strategy = "fallback", targets = ["primary", "backup"], ${value} }]`

  it.effect("target, step, route and function", () =>
    Effect.gen(function*() {
      assert.isFalse(yield* continued({}))
      assert.isTrue(yield* continued({ primary: on }))
      assert.isTrue(yield* continued({ route: on }))
      assert.isTrue(yield* continued({ targets: steps(on) }))
      assert.isTrue(yield* continued({ table: "functions", route: on }))
      assert.isTrue(yield* continued({ table: "functions", targets: steps(on) }))
    }))

  it.effect("the target's own value beats its step's and route's; a step's beats its route's", () =>
    Effect.gen(function*() {
      assert.isFalse(yield* continued({ primary: off, route: on }))
      assert.isTrue(yield* continued({ primary: on, route: off }))
      assert.isFalse(yield* continued({ route: on, targets: steps(off) }))
      assert.isTrue(yield* continued({ route: off, targets: steps(on) }))
    }))

  it("check-config refuses a value that is neither \"error\" nor \"continue\"", () => {
    assert.throws(() => smart({ route: "on_stream_break = \"retry\"" }), /on_stream_break/)
  })
})
