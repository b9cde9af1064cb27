/**
 * The library reads a streamed chat answer as the gateway's canonical events,
 * handed over by the request program itself (decoded from the provider's
 * stream on the fast path and on the translated one), not parsed back from
 * the SSE the gateway would write.
 */
import { Effect, Exit, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { Gateway, gatewayLayer, ResponseCache, scriptedProviders, TestReply } from "../../src/index.ts"
import type { ChatStreamEvent } from "../../src/index.ts"

const toml = `
[providers.openai]
models = ["gpt-4o"]
credential = "env::OPENAI_KEY"

[providers.anthropic]
models = ["claude-sonnet-4-5"]
credential = "env::ANTHROPIC_KEY"

[telemetry]
enabled = false
`

/** Each provider streams three pieces; a prompt saying "break" gets a stream cut after its first piece. */
const providers = scriptedProviders((call) => {
  const family = call.providerId === "openai" ? "openai" : "anthropic"
  const broken = String(call.body).includes("break")
  return TestReply.chatStream(family, ["Hello", " from", " upstream"], broken ? { failAfter: family === "openai" ? 2 : 3 } : {})
})

const gateway = gatewayLayer({ toml }, {
  env: { OPENAI_KEY: "sk-openai-example", ANTHROPIC_KEY: "sk-ant-example" },
  client: providers,
  cache: ResponseCache.layerTest()
})

const events = (model: string, prompt: string) =>
  Effect.runPromise(Effect.exit(Effect.provide(
    Effect.flatMap(Gateway, (gw) => Stream.runCollect(gw.chatEvents({ model, stream: true, messages: [{ role: "user", content: prompt }] }))),
    gateway
  )))

const text = (all: ReadonlyArray<ChatStreamEvent>): string => all.map((event) => (event.type === "text_delta" ? event.text : "")).join("")

describe("a streamed chat answer read by the library as canonical events", () => {
  for (const [path, model] of [["fast path (OpenAI caller, OpenAI provider)", "gpt-4o"], ["translated (OpenAI caller, Anthropic provider)", "claude-sonnet-4-5"]] as const) {
    it(`${path}: the events in order, from the start to the finish`, async () => {
      const exit = await events(model, "Say hello")
      expect(Exit.isSuccess(exit)).toBe(true)
      const all = Exit.isSuccess(exit) ? [...exit.value] : []
      expect(all[0]?.type).toBe("message_start")
      expect(text(all)).toBe("Hello from upstream")
      expect(all.some((event) => event.type === "message_delta" && event.stopReason !== undefined)).toBe(true)
      expect(all[all.length - 1]?.type).toBe("message_stop")
    })

    it(`${path}: a stream cut after its first content fails the reader after the events before the cut`, async () => {
      const exit = await events(model, "break")
      expect(Exit.isFailure(exit)).toBe(true)
      const failure = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      expect(failure?._tag === "Fail" ? failure.error._tag : undefined).toBe("GatewayRequestError")
    })
  }
})
