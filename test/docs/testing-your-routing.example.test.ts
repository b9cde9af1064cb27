import { assert, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { routingFromToml, scriptedProviders, sendRequest, TestReply } from "../../src/testing.ts"

// 1. Your configuration, as in config/gateway.toml.
const routing = routingFromToml(`
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
    // 2. Script the providers: OpenAI answers 429 (Retry-After: 5), Anthropic answers in its own format.
    const providers = scriptedProviders((call) =>
      call.providerId === "openai"
        ? TestReply.error(429, { retryAfter: 5 })
        : TestReply.json(200, {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "claude-sonnet-4-5",
          content: [{ type: "text", text: "Hello from Claude" }],
          stop_reason: "end_turn",
          usage: { input_tokens: 9, output_tokens: 4 }
        })
    )

    // 3. Send the request through the gateway on virtual time: start it, move the clock past the waits, join it.
    const fiber = yield* sendRequest(routing, { model: "smart" }).pipe(Effect.provide(providers), Effect.forkChild)
    yield* TestClock.adjust("20 seconds")
    const answer = yield* Fiber.join(fiber)

    // 4. Assert what your callers would see, and which upstream calls were made when.
    assert.deepStrictEqual(answer.calls.map((call) => [call.provider, call.atMs]), [
      ["openai", 0],
      ["openai", 5000], // Retry-After honoured: 10 s of waiting, no wall time
      ["openai", 10000],
      ["anthropic", 10000]
    ])
    assert.strictEqual(answer.status, 200)
    assert.strictEqual(answer.headers["x-gw-upstream-provider"], "anthropic")
    const completion = answer.body as { object: string; choices: Array<{ message: { content: string } }> }
    assert.strictEqual(completion.object, "chat.completion") // translated into the caller's (OpenAI) format
    assert.strictEqual(completion.choices[0].message.content, "Hello from Claude")
  }))
