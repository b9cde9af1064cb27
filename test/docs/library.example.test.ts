import { Effect, Layer, Stream } from "effect"
import { expect, it } from "vitest"
import { Gateway, GatewayRequestError, gatewayLayer, ResponseCache, scriptedProviders, TestReply } from "../../src/index.ts"
import type { UpstreamCall } from "../../src/index.ts"

// 1. A configuration, as in config/gateway.toml (or { file: "path.toml" }, or { config: {...} }).
const toml = `
[providers.openai]
models = ["gpt-4o", "text-embedding-3-small"]
credential = "env::OPENAI_KEY"

[providers.anthropic]
models = ["claude-sonnet-4-5"]
credential = "env::ANTHROPIC_KEY"

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
max_retries = 0

[security]
enabled = true

[cache]
enabled = true
encrypt_salt = "example"

[telemetry]
enabled = false
`

// 2. The providers, scripted: OpenAI is down, Anthropic answers (leave `client` out to call the real ones).
const calls: Array<UpstreamCall> = []
const providers = scriptedProviders((call) => {
  if (call.providerId === "openai" && call.path.endsWith("/embeddings")) {
    return TestReply.json(200, { object: "list", model: "text-embedding-3-small", data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }], usage: { prompt_tokens: 2, total_tokens: 2 } })
  }
  if (call.providerId === "openai") return TestReply.error(503)
  const request = JSON.parse(String(call.body)) as { stream?: boolean }
  return request.stream === true
    ? TestReply.chatStream("anthropic", ["Hello", " from", " Claude"])
    : TestReply.json(200, {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [{ type: "text", text: "Hello from Claude" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 9, output_tokens: 4 }
    })
}, calls)

// 3. The layer: every stage live (guardrails, routing, translation) except the ones replaced.
const gateway = gatewayLayer({ toml }, {
  env: { OPENAI_KEY: "sk-openai-example", ANTHROPIC_KEY: "sk-ant-example" },
  client: providers,
  cache: ResponseCache.layerTest()
})

const run = <A, E>(program: Effect.Effect<A, E, Gateway>) => Effect.runPromise(Effect.provide(program, gateway))

it("a chat request falls back from OpenAI to Anthropic and answers in the OpenAI format", async () => {
  const answer = await run(Effect.gen(function*() {
    const gw = yield* Gateway
    return yield* gw.chat({ model: "smart", messages: [{ role: "user", content: "Say hello" }] })
  }))
  expect(answer.object).toBe("chat.completion")
  expect(answer.choices[0].message.content).toBe("Hello from Claude")
  expect(calls.map((call) => call.providerId)).toEqual(["openai", "anthropic"])
})

it("a streamed request yields the chunks as they come", async () => {
  const chunks = await run(Effect.gen(function*() {
    const gw = yield* Gateway
    return yield* Stream.runCollect(gw.chatStream({ model: "smart", messages: [{ role: "user", content: "Stream a hello" }] }))
  }))
  const text = chunks.map((chunk) => (chunk.data as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "").join("")
  expect(text).toBe("Hello from Claude")
})

it("a refused request fails with the status and code the HTTP caller would get", async () => {
  const failure = await run(Effect.gen(function*() {
    const gw = yield* Gateway
    return yield* Effect.flip(gw.chat({ model: "smart", messages: [{ role: "user", content: "my card is 4111 1111 1111 1111" }] }))
  }))
  expect(failure).toBeInstanceOf(GatewayRequestError)
  expect(failure.status).toBe(400)
  expect(failure.code).toBe("pii_detected")
})

it("embeddings, and any request in either wire format with request()", async () => {
  const result = await run(Effect.gen(function*() {
    const gw = yield* Gateway
    const embedded = yield* gw.embeddings({ model: "text-embedding-3-small", input: "hello" })
    const again = yield* gw.embeddings({ model: "text-embedding-3-small", input: "hello" }, { headers: { "x-request-id": "second" } })
    const raw = yield* gw.request({
      method: "POST",
      path: "/v1/messages",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] })
    })
    return { embedded, again, status: raw.status, provider: raw.headers["x-gw-upstream-provider"] }
  }))
  expect(result.embedded.data[0].embedding).toEqual([0.1, 0.2])
  expect(result.again).toEqual(result.embedded) // the second one came from the cache
  expect(result.status).toBe(200)
  expect(result.provider).toBe("anthropic")
})

it("a layer of your own replaces a stage: here, a cache that is always down", async () => {
  const down = ResponseCache.layerTest({ values: new Map(), down: true })
  const answer = await Effect.runPromise(Effect.gen(function*() {
    const gw = yield* Gateway
    return yield* gw.embeddings({ model: "text-embedding-3-small", input: "still answered" })
  }).pipe(Effect.provide(gatewayLayer({ toml }, { env: { OPENAI_KEY: "sk", ANTHROPIC_KEY: "sk" }, client: providers, cache: down }))))
  expect(answer.object).toBe("list")
  expect(Layer.isLayer(down)).toBe(true)
})
