/**
 * Hedging on virtual time (`hedge_after_ms`): a target with no content in
 * time gets the step's next target started beside it, and the first to answer
 * is the answer; content in time starts no hedge; one that fails leaves the
 * other running; `max_hedges` bounds the hedges of a request; where it is set
 * and which value wins.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { routingFromToml, TestReply } from "../../src/testing.ts"
import type { RoutedAnswer, RoutingUnderTest, UpstreamCall } from "../../src/testing.ts"
import { sendAfter, smartTable } from "./on-test-clock.ts"
import type { SmartLayout } from "./on-test-clock.ts"

/** Where the hedge settings go (TOML lines under that table), and the route's shape. */
type Layout = SmartLayout

/** Three targets (OpenAI, Anthropic, OpenAI again) and `smart` falling back from one to the next. */
const smart = (layout: Layout = {}) => {
  return routingFromToml(`
[providers.openai]
models = ["gpt-4o", "gpt-4o-mini"]

[providers.anthropic]
models = ["claude-sonnet-4-5"]

[targets.primary]
model = "gpt-4o"
${layout.primary ?? ""}

[targets.backup]
model = "claude-sonnet-4-5"

[targets.third]
model = "gpt-4o-mini"

${smartTable(layout, '["primary", "backup", "third"]')}`)
}

type Script = Readonly<Record<string, TestReply>>

/** Answers each call by the model it asks for (`gpt-4o`, `claude-sonnet-4-5`, `gpt-4o-mini`). */
const byModel = (script: Script) => (call: UpstreamCall): TestReply => {
  const text = typeof call.body === "string" ? call.body : Buffer.from(call.body as Uint8Array).toString("utf8")
  const model = (JSON.parse(text) as { model: string }).model
  return script[model] ?? TestReply.error(500)
}

const openAi = (text: string, options: { readonly stallAfter?: number } = {}) => TestReply.chatStream("openai", [text], options)
const claude = (text: string, options: { readonly stallAfter?: number } = {}) => TestReply.chatStream("anthropic", [text], options)
const stalled = { stallAfter: 1 }

/** Sends a request to `smart` with upstreams answering by `script`, moves the clock `advance` ms on, and joins it. */
const sent = (routing: RoutingUnderTest, script: Script, advance: number, stream = true) => sendAfter(routing, byModel(script), advance, stream)

const callsOf = (answer: RoutedAnswer) => answer.calls.map((call) => [call.model, call.atMs])

describe("hedge_after_ms: a slow target gets the next one started beside it", () => {
  it.effect("no content within hedge_after_ms: the next target starts beside it and its stream is the answer", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": openAi("from OpenAI", stalled),
        "claude-sonnet-4-5": claude("from Claude")
      }, 5_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000]])
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
      const text = String(answer.body)
      assert.include(text, "from Claude")
      assert.notInclude(text, "from OpenAI")
      assert.notInclude(text, "error")
    }))

  it.effect("content in time: no hedge is started", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.delay(900, openAi("just in time")),
        "claude-sonnet-4-5": claude("unused")
      }, 5_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0]])
      assert.include(String(answer.body), "just in time")
    }))

  it.effect("the first target may still win: its content arrives before the hedge's, and the hedge is dropped", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.delay(1500, openAi("slow but first")),
        "claude-sonnet-4-5": TestReply.delay(2000, claude("later"))
      }, 10_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000]])
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "openai")
      assert.include(String(answer.body), "slow but first")
      assert.notInclude(String(answer.body), "later")
    }))

  it.effect("a target that fails before its hedge started is followed at once, as without hedging", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.error(500),
        "claude-sonnet-4-5": claude("next at once")
      }, 5_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 0]])
      assert.include(String(answer.body), "next at once")
    }))

  it.effect("one of the two fails before content: the other goes on and answers", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.delay(3000, openAi("after the hedge failed")),
        "claude-sonnet-4-5": TestReply.delay(500, TestReply.error(503))
      }, 10_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000]])
      assert.include(String(answer.body), "after the hedge failed")
    }))

  it.effect("both fail: routing goes on after the hedge, with the step's next target", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000", primary: "hedge_after_ms = 60000" }), {
        "gpt-4o": TestReply.delay(1500, TestReply.error(500)),
        "claude-sonnet-4-5": TestReply.delay(1000, TestReply.error(503)),
        "gpt-4o-mini": openAi("third time lucky")
      }, 10_000)
      // The primary's own hedge_after_ms (60 s) wins over the route's: no hedge, a plain fallback chain.
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1500], ["gpt-4o-mini", 2500]])
      const hedged = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.delay(1500, TestReply.error(500)),
        "claude-sonnet-4-5": TestReply.delay(1000, TestReply.error(503)),
        "gpt-4o-mini": openAi("third time lucky")
      }, 10_000)
      assert.deepStrictEqual(callsOf(hedged), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000], ["gpt-4o-mini", 2000]])
      assert.include(String(hedged.body), "third time lucky")
    }))

  it.effect("a request that does not stream is hedged on its whole answer: the first complete answer wins", () =>
    Effect.gen(function*() {
      const completion = (content: string) => ({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 0,
        model: "gpt-4o",
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
      })
      const message = {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [{ type: "text", text: "whole from Claude" }],
        stop_reason: "end_turn",
        usage: { input_tokens: 1, output_tokens: 2 }
      }
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000" }), {
        "gpt-4o": TestReply.delay(5000, TestReply.json(200, completion("whole from OpenAI"))),
        "claude-sonnet-4-5": TestReply.delay(200, TestReply.json(200, message))
      }, 10_000, false)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000]])
      assert.strictEqual(answer.status, 200)
      assert.deepInclude((answer.body as { choices: Array<{ message: unknown }> }).choices[0].message, { content: "whole from Claude" })
    }))

  it.effect("without hedge_after_ms a slow target is waited for: no second call", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart(), {
        "gpt-4o": TestReply.delay(4000, openAi("patience")),
        "claude-sonnet-4-5": claude("unused")
      }, 10_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0]])
      assert.include(String(answer.body), "patience")
    }))
})

describe("max_hedges: how many hedges a request may start", () => {
  const allSlow = {
    "gpt-4o": openAi("one", stalled),
    "claude-sonnet-4-5": claude("two", { stallAfter: 2 }),
    "gpt-4o-mini": openAi("three")
  }

  it.effect("by default one: the hedge that is slow too gets no hedge of its own", () =>
    Effect.gen(function*() {
      // ttft_ms ends the two stalled streams (at 4000 and 5000 ms); the third target then runs as a plain fallback.
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000\nttft_ms = 4000" }), allSlow, 10_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000], ["gpt-4o-mini", 5000]])
      assert.include(String(answer.body), "three")
    }))

  it.effect("max_hedges = 2: the hedge is hedged in turn, and the third target's stream is the answer", () =>
    Effect.gen(function*() {
      const answer = yield* sent(smart({ route: "hedge_after_ms = 1000\nmax_hedges = 2\nttft_ms = 4000" }), allSlow, 10_000)
      assert.deepStrictEqual(callsOf(answer), [["gpt-4o", 0], ["claude-sonnet-4-5", 1000], ["gpt-4o-mini", 2000]])
      assert.include(String(answer.body), "three")
    }))
})

describe("hedge_after_ms: where it is set, the most specific wins", () => {
  /** The moment the hedge started (when Anthropic was called). */
  const hedgedAt = (layout: Layout) =>
    Effect.map(sent(smart(layout), { "gpt-4o": openAi("stalls", stalled), "claude-sonnet-4-5": claude("hedge") }, 60_000), (answer) => {
      assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
      return answer.calls[1].atMs
    })
  const steps = (ms: number) => `steps = [{ strategy = "fallback", targets = ["primary", "backup"], hedge_after_ms = ${ms} }]`

  it.effect("a step's value wins over the route's, the target's own over both", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* hedgedAt({ route: "hedge_after_ms = 1500" }), 1500)
      assert.strictEqual(yield* hedgedAt({ route: "hedge_after_ms = 1500", targets: steps(1200) }), 1200)
      assert.strictEqual(yield* hedgedAt({ route: "hedge_after_ms = 1500", targets: steps(1200), primary: "hedge_after_ms = 800" }), 800)
    }))

  it.effect("a function's value applies to its targets, and its steps' over it", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* hedgedAt({ table: "functions", route: "hedge_after_ms = 900" }), 900)
      assert.strictEqual(yield* hedgedAt({ table: "functions", route: "hedge_after_ms = 900", targets: steps(600) }), 600)
    }))

  it("a hedge_after_ms or max_hedges that is not a positive integer is refused, naming the field", () => {
    assert.throws(() => smart({ route: "hedge_after_ms = 0" }), /routes\.smart\.hedge_after_ms/)
    assert.throws(() => smart({ primary: "max_hedges = 0" }), /targets\.primary\.max_hedges/)
    assert.throws(() => smart({ route: "max_hedges = 1.5" }), /routes\.smart\.max_hedges/)
  })
})
