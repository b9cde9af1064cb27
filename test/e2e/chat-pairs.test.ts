/**
 * Every caller → provider pair, driven by the official SDKs against fake upstreams
 * that speak the real wire formats: plain text, streamed text, a tool call (streamed
 * and not) and a multi-turn conversation with tool results. Each test checks what the
 * SDK parsed AND what reached the upstream (translated body, auth form, headers).
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import type { IncomingHttpHeaders } from "node:http"
import { describe, expect, it } from "vitest"
import { anthropicStream, openAiStream, promptTokensOf } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream, RecordedRequest } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

const CALLER_KEY = "sk-caller-own-key-1234"
const PLATFORM_SECRET = "platform-secret-do-not-forward"
/** Headers only the gateway may read; none of them may reach a provider. */
const GATEWAY_HEADERS = {
  "x-gw-authorization": `Bearer ${PLATFORM_SECRET}`,
  "x-gw-project-id": "proj-e2e"
}

const { fakes, gateway: gw } = gatewayWithFakes(
  {
    openai: { kind: "openai" },
    anthropic: { kind: "anthropic" },
    azure: { kind: "azure" },
    /** Fakes that say something before calling a tool (text block/content, then the tool call). */
    anthropicPreamble: { kind: "anthropic", toolPreamble: "Let me check." },
    openaiPreamble: { kind: "openai", toolPreamble: "Let me check." }
  },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::PAIRS_OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model", "claude-e2e-small"], credential: "env::PAIRS_ANTHROPIC_KEY" },
      azure: { base_url: fakes.azure.url, models: ["my-deployment"], api_version: "2024-10-21", credential: "env::PAIRS_AZURE_KEY" },
      "anthropic-pre": { kind: "anthropic", base_url: fakes.anthropicPreamble.url, models: ["claude-preamble"], credential: "none" },
      "openai-pre": { kind: "openai", base_url: `${fakes.openaiPreamble.url}/v1`, models: ["gpt-preamble"], credential: "none" }
    },
    models: { "claude-e2e-small": { max_tokens: 1234 } },
    routing: { retry: { max_retries: 0 } }
  }),
  { PAIRS_OPENAI_KEY: "sk-configured-openai", PAIRS_ANTHROPIC_KEY: "sk-configured-anthropic", PAIRS_AZURE_KEY: "configured-azure" }
)

// ---------------------------------------------------------------------------
// Clients and helpers
// ---------------------------------------------------------------------------

const openaiClient = (extra: Record<string, string> = {}) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0, defaultHeaders: { ...GATEWAY_HEADERS, ...extra } })

const anthropicClient = (extra: Record<string, string> = {}) =>
  new Anthropic({ baseURL: gw.url, apiKey: CALLER_KEY, maxRetries: 0, defaultHeaders: { ...GATEWAY_HEADERS, ...extra } })

const only = (fake: FakeUpstream): RecordedRequest => {
  expect(fake.requests).toHaveLength(1)
  return fake.requests[0]
}

type Json = Record<string, any>
const bodyOf = (rec: RecordedRequest): Json => rec.json as Json

/** Nothing the gateway owns (x-gw-*, x-genai-*, the platform key) is sent to a provider. */
const expectNoGatewayHeaders = (headers: IncomingHttpHeaders) => {
  for (const [name, value] of Object.entries(headers)) {
    expect(name.startsWith("x-gw-") || name.startsWith("x-genai-"), `header ${name} forwarded`).toBe(false)
    expect(String(value)).not.toContain(PLATFORM_SECRET)
  }
}

/** The provider's own auth form carries the caller's key, and no other form is present. */
const expectAuth = (rec: RecordedRequest, provider: "openai" | "anthropic" | "azure", key = CALLER_KEY) => {
  const h = rec.headers
  if (provider === "openai") {
    expect(h.authorization).toBe(`Bearer ${key}`)
    expect(h["x-api-key"]).toBeUndefined()
    expect(h["api-key"]).toBeUndefined()
  } else if (provider === "anthropic") {
    expect(h["x-api-key"]).toBe(key)
    expect(h["anthropic-version"]).toBeTruthy()
    expect(h.authorization).toBeUndefined()
    expect(h["api-key"]).toBeUndefined()
  } else {
    expect(h["api-key"]).toBe(key)
    expect(h.authorization).toBeUndefined()
    expect(h["x-api-key"]).toBeUndefined()
    expect(rec.pathname).toBe("/openai/deployments/my-deployment/chat/completions")
    expect(rec.query["api-version"]).toBe("2024-10-21")
  }
  expectNoGatewayHeaders(h)
}

/** Text of an Anthropic `system` (string or text blocks). */
const systemText = (system: unknown): string =>
  typeof system === "string" ? system : (system as Array<{ text: string }>).map((b) => b.text).join("\n")

/** Text of an OpenAI message `content` (string or text parts). */
const contentText = (content: unknown): string =>
  typeof content === "string" ? content : (content as Array<{ text: string }>).map((p) => p.text).join("")

const weatherToolOpenAi = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}
const weatherToolAnthropic = {
  name: "get_weather",
  description: "Current weather for a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] }
}

const openAiConversation = [
  { role: "system" as const, content: "You are terse." },
  { role: "user" as const, content: "What is the weather in Paris? use tool" },
  {
    role: "assistant" as const,
    content: null,
    tool_calls: [{ id: "call_abc123", type: "function" as const, function: { name: "get_weather", arguments: '{"city":"Paris"}' } }]
  },
  { role: "tool" as const, tool_call_id: "call_abc123", content: "18C and sunny" }
]

const anthropicConversation = [
  { role: "user" as const, content: "What is the weather in Paris? use tool" },
  { role: "assistant" as const, content: [{ type: "tool_use" as const, id: "toolu_01abc", name: "get_weather", input: { city: "Paris" } }] },
  { role: "user" as const, content: [{ type: "tool_result" as const, tool_use_id: "toolu_01abc", content: "18C and sunny" }] }
]

// ---------------------------------------------------------------------------
// OpenAI caller (openai SDK) → OpenAI provider, Azure provider, Anthropic provider
// ---------------------------------------------------------------------------

const openAiCallerCases = [
  { pair: "openai → openai", model: "gpt-4o", upstream: () => fakes.openai, provider: "openai" as const },
  { pair: "openai → azure", model: "my-deployment", upstream: () => fakes.azure, provider: "azure" as const },
  { pair: "openai → anthropic", model: "claude-e2e-model", upstream: () => fakes.anthropic, provider: "anthropic" as const }
]

for (const c of openAiCallerCases) {
  const toAnthropic = c.provider === "anthropic"
  describe(c.pair, () => {
    it("answers plain text the SDK parses as a chat.completion", async () => {
      const completion = await openaiClient().chat.completions.create({
        model: c.model,
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content: "hello there" }
        ]
      })
      expect(completion.object).toBe("chat.completion")
      expect(completion.choices[0].message.role).toBe("assistant")
      expect(completion.choices[0].message.content).toBe("echo: hello there")
      expect(completion.choices[0].finish_reason).toBe("stop")
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      expect(completion.usage?.prompt_tokens).toBe(promptTokensOf(body))
      expect(completion.usage?.completion_tokens).toBe(3)
      if (toAnthropic) {
        expect(rec.pathname).toBe("/v1/messages")
        expect(systemText(body.system)).toBe("You are terse.")
        expect(body.messages.map((m: Json) => m.role)).toEqual(["user"])
        expect(body.max_tokens).toBe(4096)
        expect(body.model).toBe("claude-e2e-model")
      } else {
        expect(body.messages).toEqual([
          { role: "system", content: "You are terse." },
          { role: "user", content: "hello there" }
        ])
      }
    })

    it("streams text that stream.finalChatCompletion() assembles", async () => {
      const stream = openaiClient().chat.completions.stream({ model: c.model, messages: [{ role: "user", content: "stream these words please" }] })
      const deltas: string[] = []
      stream.on("content", (delta) => deltas.push(delta))
      const final = await stream.finalChatCompletion()
      expect(final.choices[0].message.content).toBe("echo: stream these words please")
      expect(final.choices[0].finish_reason).toBe("stop")
      expect(deltas.length).toBeGreaterThan(1)
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      expect(bodyOf(rec).stream).toBe(true)
      if (toAnthropic) expect(rec.pathname).toBe("/v1/messages")
    })

    it("returns a non-streamed tool call with parsed arguments", async () => {
      const completion = await openaiClient().chat.completions.create({
        model: c.model,
        messages: [{ role: "user", content: "Weather in Paris? use tool" }],
        tools: [weatherToolOpenAi]
      })
      const choice = completion.choices[0]
      expect(choice.finish_reason).toBe("tool_calls")
      expect(choice.message.tool_calls).toHaveLength(1)
      const call = choice.message.tool_calls![0] as { id: string; type: string; function: { name: string; arguments: string } }
      expect(call.type).toBe("function")
      expect(call.id).toBeTruthy()
      expect(call.function.name).toBe("get_weather")
      expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" })
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      if (toAnthropic) {
        expect(body.tools).toEqual([
          { name: "get_weather", description: "Current weather for a city", input_schema: weatherToolOpenAi.function.parameters }
        ])
      } else {
        expect(body.tools).toEqual([weatherToolOpenAi])
      }
    })

    it("streams a tool call that finalChatCompletion() reassembles", async () => {
      const stream = openaiClient().chat.completions.stream({
        model: c.model,
        messages: [{ role: "user", content: "Weather in Paris? use tool" }],
        tools: [weatherToolOpenAi]
      })
      const final = await stream.finalChatCompletion()
      const choice = final.choices[0]
      expect(choice.finish_reason).toBe("tool_calls")
      const call = choice.message.tool_calls![0] as { id: string; function: { name: string; arguments: string } }
      expect(call.function.name).toBe("get_weather")
      expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" })
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      expect(body.stream).toBe(true)
      if (toAnthropic) expect(body.tools[0].input_schema).toEqual(weatherToolOpenAi.function.parameters)
    })

    it("carries a multi-turn conversation with a tool result", async () => {
      const completion = await openaiClient().chat.completions.create({
        model: c.model,
        messages: openAiConversation,
        tools: [weatherToolOpenAi]
      })
      expect(completion.choices[0].message.content).toBe("echo: 18C and sunny")
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      if (toAnthropic) {
        expect(systemText(body.system)).toBe("You are terse.")
        expect(body.messages).toHaveLength(3)
        expect(body.messages[0].role).toBe("user")
        expect(contentText(body.messages[0].content)).toBe("What is the weather in Paris? use tool")
        expect(body.messages[1]).toEqual({
          role: "assistant",
          content: [{ type: "tool_use", id: "call_abc123", name: "get_weather", input: { city: "Paris" } }]
        })
        expect(body.messages[2].role).toBe("user")
        expect(body.messages[2].content).toHaveLength(1)
        expect(body.messages[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: "call_abc123" })
        expect(contentText(body.messages[2].content[0].content)).toBe("18C and sunny")
      } else {
        expect(body.messages).toEqual(openAiConversation)
      }
    })
  })
}

// ---------------------------------------------------------------------------
// OpenAI caller → Anthropic provider: request translation details
// ---------------------------------------------------------------------------

describe("openai → anthropic request translation", () => {
  it("moves stop to stop_sequences, and the upstream's stop sequence ends the text", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      messages: [{ role: "user", content: "alpha beta END gamma" }],
      stop: ["END"]
    })
    expect(completion.choices[0].message.content).toBe("echo: alpha beta ")
    expect(completion.choices[0].finish_reason).toBe("stop")
    const body = bodyOf(only(fakes.anthropic))
    expect(body.stop_sequences).toEqual(["END"])
    expect(body).not.toHaveProperty("stop")
  })

  it("defaults max_tokens to the model's [models.X] max_tokens when the caller sends none", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-small", messages: [{ role: "user", content: "hi" }] })
    expect(bodyOf(only(fakes.anthropic)).max_tokens).toBe(1234)
  })

  it("keeps the caller's own max_tokens over any default", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-small", max_tokens: 77, messages: [{ role: "user", content: "hi" }] })
    expect(bodyOf(only(fakes.anthropic)).max_tokens).toBe(77)
  })

  it("sends x-api-key and the gateway's anthropic-version, never the caller's bearer header", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-model", messages: [{ role: "user", content: "hi" }] })
    const rec = only(fakes.anthropic)
    expect(rec.headers["anthropic-version"]).toBe("2023-06-01")
    expectAuth(rec, "anthropic")
  })
})

// ---------------------------------------------------------------------------
// Anthropic caller (@anthropic-ai/sdk) → Anthropic provider, OpenAI provider
// ---------------------------------------------------------------------------

const anthropicCallerCases = [
  { pair: "anthropic → anthropic", model: "claude-e2e-model", upstream: () => fakes.anthropic, provider: "anthropic" as const },
  { pair: "anthropic → openai", model: "gpt-4o", upstream: () => fakes.openai, provider: "openai" as const }
]

for (const c of anthropicCallerCases) {
  const toOpenAi = c.provider === "openai"
  describe(c.pair, () => {
    it("answers plain text the SDK parses as a message", async () => {
      const message = await anthropicClient().messages.create({
        model: c.model,
        max_tokens: 100,
        system: "You are terse.",
        messages: [{ role: "user", content: "hello there" }]
      })
      expect(message.type).toBe("message")
      expect(message.role).toBe("assistant")
      expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "echo: hello there" })])
      expect(message.stop_reason).toBe("end_turn")
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      expect(message.usage.input_tokens).toBe(promptTokensOf(body))
      expect(message.usage.output_tokens).toBe(3)
      if (toOpenAi) {
        expect(rec.pathname).toBe("/v1/chat/completions")
        expect(body.messages[0]).toEqual({ role: "system", content: "You are terse." })
        expect(body.messages[1].role).toBe("user")
        expect(contentText(body.messages[1].content)).toBe("hello there")
        expect(body.max_tokens ?? body.max_completion_tokens).toBe(100)
        expect(body).not.toHaveProperty("system")
      } else {
        expect(body).toMatchObject({ model: c.model, max_tokens: 100, system: "You are terse." })
      }
    })

    it("streams text that stream.finalMessage() assembles", async () => {
      const stream = anthropicClient().messages.stream({
        model: c.model,
        max_tokens: 100,
        messages: [{ role: "user", content: "stream these words please" }]
      })
      const deltas: string[] = []
      stream.on("text", (delta) => deltas.push(delta))
      const message = await stream.finalMessage()
      expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "echo: stream these words please" })])
      expect(message.stop_reason).toBe("end_turn")
      expect(deltas.length).toBeGreaterThan(1)
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      expect(body.stream).toBe(true)
      expect(message.usage.output_tokens).toBe(5)
      if (toOpenAi) {
        // The gateway needs usage from an OpenAI stream to report it in message_delta.
        expect(body.stream_options).toEqual({ include_usage: true })
        expect(message.usage.input_tokens).toBe(promptTokensOf(body))
      }
    })

    it("returns a non-streamed tool_use block with parsed input", async () => {
      const message = await anthropicClient().messages.create({
        model: c.model,
        max_tokens: 100,
        messages: [{ role: "user", content: "Weather in Paris? use tool" }],
        tools: [weatherToolAnthropic]
      })
      expect(message.stop_reason).toBe("tool_use")
      const toolUse = message.content.find((b) => b.type === "tool_use")
      expect(toolUse).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } })
      expect((toolUse as { id: string }).id).toMatch(/^[a-zA-Z0-9_-]+$/)
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      if (toOpenAi) {
        expect(body.tools).toEqual([
          { type: "function", function: { name: "get_weather", description: "Current weather for a city", parameters: weatherToolAnthropic.input_schema } }
        ])
      } else {
        expect(body.tools).toEqual([weatherToolAnthropic])
      }
    })

    it("streams a tool_use block that finalMessage() reassembles", async () => {
      const message = await anthropicClient()
        .messages.stream({
          model: c.model,
          max_tokens: 100,
          messages: [{ role: "user", content: "Weather in Paris? use tool" }],
          tools: [weatherToolAnthropic]
        })
        .finalMessage()
      expect(message.stop_reason).toBe("tool_use")
      const toolUse = message.content.find((b) => b.type === "tool_use")
      expect(toolUse).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } })
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      if (toOpenAi) expect(bodyOf(rec).tools[0].function.parameters).toEqual(weatherToolAnthropic.input_schema)
    })

    it("carries a multi-turn conversation with a tool result", async () => {
      const message = await anthropicClient().messages.create({
        model: c.model,
        max_tokens: 100,
        system: "You are terse.",
        messages: anthropicConversation,
        tools: [weatherToolAnthropic]
      })
      expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "echo: 18C and sunny" })])
      const rec = only(c.upstream())
      expectAuth(rec, c.provider)
      const body = bodyOf(rec)
      if (toOpenAi) {
        const roles = body.messages.map((m: Json) => m.role)
        expect(roles).toEqual(["system", "user", "assistant", "tool"])
        expect(body.messages[2].tool_calls).toHaveLength(1)
        expect(body.messages[2].tool_calls[0]).toMatchObject({ id: "toolu_01abc", type: "function", function: { name: "get_weather" } })
        expect(JSON.parse(body.messages[2].tool_calls[0].function.arguments)).toEqual({ city: "Paris" })
        expect(body.messages[3].tool_call_id).toBe("toolu_01abc")
        expect(contentText(body.messages[3].content)).toBe("18C and sunny")
      } else {
        expect(body.messages).toEqual(anthropicConversation)
        expect(body.system).toBe("You are terse.")
      }
    })
  })
}

describe("anthropic → anthropic headers", () => {
  it("forwards the caller's anthropic-version and anthropic-beta, and the key as x-api-key", async () => {
    await anthropicClient({ "anthropic-beta": "tools-2024-04-04" }).messages.create({
      model: "claude-e2e-model",
      max_tokens: 50,
      messages: [{ role: "user", content: "hi" }]
    })
    const rec = only(fakes.anthropic)
    expect(rec.headers["anthropic-version"]).toBe("2026-10-21")
    expect(rec.headers["anthropic-beta"]).toBe("tools-2024-04-04")
    expectAuth(rec, "anthropic")
  })
})

// ---------------------------------------------------------------------------
// Translation details a caller notices
// ---------------------------------------------------------------------------

/** The raw SSE data payloads of a streamed answer (fetch, no SDK). */
const rawChunks = async (path: string, body: object): Promise<Json[]> => {
  const res = await fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  expect(res.status).toBe(200)
  const text = await res.text()
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)) as Json)
}

describe("openai caller ← anthropic provider: content and tool calls", () => {
  it("text before a tool call arrives as content next to tool_calls (not streamed)", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-preamble",
      messages: [{ role: "user", content: "Weather? use tool" }],
      tools: [weatherToolOpenAi]
    })
    const message = completion.choices[0].message
    expect(message.content).toBe("Let me check.")
    expect(message.tool_calls).toHaveLength(1)
    expect((message.tool_calls![0] as { function: { name: string } }).function.name).toBe("get_weather")
    expect(completion.choices[0].finish_reason).toBe("tool_calls")
  })

  it("a streamed tool call after text has tool-call index 0, so the SDK assembles exactly one call", async () => {
    const final = await openaiClient()
      .chat.completions.stream({ model: "claude-preamble", messages: [{ role: "user", content: "Weather? use tool" }], tools: [weatherToolOpenAi] })
      .finalChatCompletion()
    expect(final.choices[0].message.content).toBe("Let me check.")
    expect(final.choices[0].message.tool_calls).toHaveLength(1)
    const call = final.choices[0].message.tool_calls![0] as { function: { name: string; arguments: string } }
    expect(call.function.name).toBe("get_weather")
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" })
    fakes.anthropicPreamble.reset()
    const chunks = await rawChunks("/v1/chat/completions", {
      model: "claude-preamble",
      stream: true,
      messages: [{ role: "user", content: "Weather? use tool" }],
      tools: [weatherToolOpenAi]
    })
    const indexes = chunks.flatMap((c) => (c.choices ?? []).flatMap((ch: Json) => (ch.delta?.tool_calls ?? []).map((t: Json) => t.index)))
    expect(indexes.length).toBeGreaterThan(0)
    expect(new Set(indexes)).toEqual(new Set([0]))
  })

  it("two streamed tool_use blocks become tool calls 0 and 1 with their own arguments", async () => {
    fakes.anthropic.script({
      kind: "sse",
      events: anthropicStream({
        model: "claude-e2e-model",
        blocks: [
          { type: "text", pieces: ["Checking."] },
          { type: "tool_use", id: "toolu_01A", name: "get_weather", pieces: ['{"city":', ' "Paris"}'] },
          { type: "tool_use", id: "toolu_01B", name: "get_time", pieces: ['{"tz": "Europe/Paris"}'] }
        ],
        usage: { input_tokens: 30, output_tokens: 12 }
      })
    })
    const final = await openaiClient()
      .chat.completions.stream({ model: "claude-e2e-model", messages: [{ role: "user", content: "both" }], stream_options: { include_usage: true } })
      .finalChatCompletion()
    const message = final.choices[0].message
    expect(message.content).toBe("Checking.")
    const calls = message.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>
    expect(calls.map((c) => c.id)).toEqual(["toolu_01A", "toolu_01B"])
    expect(calls.map((c) => c.function.name)).toEqual(["get_weather", "get_time"])
    expect(JSON.parse(calls[0].function.arguments)).toEqual({ city: "Paris" })
    expect(JSON.parse(calls[1].function.arguments)).toEqual({ tz: "Europe/Paris" })
    expect(final.choices[0].finish_reason).toBe("tool_calls")
    expect(final.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 })
  })

  it("max_tokens reached upstream is finish_reason length", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      max_tokens: 2,
      messages: [{ role: "user", content: "one two three four five" }]
    })
    expect(completion.choices[0].finish_reason).toBe("length")
    expect(completion.choices[0].message.content).toBe("echo: one")
  })

  it("a streamed answer has no usage chunk unless the caller asked for include_usage", async () => {
    const body = { model: "claude-e2e-model", stream: true, messages: [{ role: "user", content: "hi" }] }
    const without = await rawChunks("/v1/chat/completions", body)
    expect(without.some((c) => c.usage != null)).toBe(false)
    expect(without.every((c) => Array.isArray(c.choices) && c.choices.length === 1)).toBe(true)
    const withUsage = await rawChunks("/v1/chat/completions", { ...body, stream_options: { include_usage: true } })
    const last = withUsage[withUsage.length - 1]
    expect(last.choices).toEqual([])
    expect(last.usage.completion_tokens).toBe(2)
  })

  it("parallel tool calls and their results reach Anthropic as tool_use blocks and one user turn of tool_result blocks", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      tools: [weatherToolOpenAi],
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_p1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call_p2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }
          ]
        },
        { role: "tool", tool_call_id: "call_p1", content: "Paris: 18C" },
        { role: "tool", tool_call_id: "call_p2", content: "Rome: 24C" }
      ]
    })
    expect(completion.choices[0].message.content).toBe("echo: Paris: 18C Rome: 24C")
    const body = bodyOf(only(fakes.anthropic))
    expect(body.messages.map((m: Json) => m.role)).toEqual(["user", "assistant", "user"])
    expect(body.messages[1].content.map((b: Json) => [b.type, b.id, b.input])).toEqual([
      ["tool_use", "call_p1", { city: "Paris" }],
      ["tool_use", "call_p2", { city: "Rome" }]
    ])
    expect(body.messages[2].content.map((b: Json) => [b.type, b.tool_use_id, contentText(b.content)])).toEqual([
      ["tool_result", "call_p1", "Paris: 18C"],
      ["tool_result", "call_p2", "Rome: 24C"]
    ])
  })

  it("tool-call ids with characters Anthropic rejects are cleaned consistently, so the conversation is accepted", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      tools: [weatherToolOpenAi],
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call:abc/1.2", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call:abc/1.2", content: "sunny" }
      ]
    })
    expect(completion.choices[0].message.content).toBe("echo: sunny")
    const body = bodyOf(only(fakes.anthropic))
    const useId = body.messages[1].content[0].id
    expect(useId).toMatch(/^[a-zA-Z0-9_-]+$/)
    expect(body.messages[2].content[0].tool_use_id).toBe(useId)
  })
})

describe("anthropic caller ← openai provider: content and tool calls", () => {
  it("text before a tool call arrives as a text block then a tool_use block (streamed)", async () => {
    const message = await anthropicClient()
      .messages.stream({ model: "gpt-preamble", max_tokens: 100, messages: [{ role: "user", content: "Weather? use tool" }], tools: [weatherToolAnthropic] })
      .finalMessage()
    expect(message.content.map((b) => b.type)).toEqual(["text", "tool_use"])
    expect(message.content[0]).toMatchObject({ type: "text", text: "Let me check." })
    expect(message.content[1]).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } })
    expect(message.stop_reason).toBe("tool_use")
  })

  it("two streamed OpenAI tool calls become two tool_use blocks with their own inputs and the final usage", async () => {
    fakes.openai.script({
      kind: "sse",
      events: openAiStream({
        model: "gpt-4o",
        toolCalls: [
          { id: "call_W1", name: "get_weather", argumentPieces: ['{"ci', 'ty": "Paris"}'] },
          { id: "call_T2", name: "get_time", argumentPieces: ['{"tz": "Europe/Paris"}'] }
        ],
        usage: { prompt_tokens: 95, completion_tokens: 41, total_tokens: 136 }
      })
    })
    const message = await anthropicClient()
      .messages.stream({ model: "gpt-4o", max_tokens: 100, messages: [{ role: "user", content: "both" }] })
      .finalMessage()
    expect(message.content).toEqual([
      expect.objectContaining({ type: "tool_use", id: "call_W1", name: "get_weather", input: { city: "Paris" } }),
      expect.objectContaining({ type: "tool_use", id: "call_T2", name: "get_time", input: { tz: "Europe/Paris" } })
    ])
    expect(message.stop_reason).toBe("tool_use")
    expect(message.usage.input_tokens).toBe(95)
    expect(message.usage.output_tokens).toBe(41)
  })

  it("stop_sequences reach OpenAI as stop, and a length cut-off is stop_reason max_tokens", async () => {
    const message = await anthropicClient().messages.create({
      model: "gpt-4o",
      max_tokens: 2,
      stop_sequences: ["HALT"],
      messages: [{ role: "user", content: "one two three four" }]
    })
    expect(message.stop_reason).toBe("max_tokens")
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "echo: one" })])
    const body = bodyOf(only(fakes.openai))
    expect(body.stop).toEqual(["HALT"])
    expect(body).not.toHaveProperty("stop_sequences")
  })
})

describe("tool_choice across formats", () => {
  const timeToolOpenAi = {
    type: "function" as const,
    function: { name: "get_time", description: "Current time", parameters: { type: "object", properties: { tz: { type: "string" } } } }
  }
  const timeToolAnthropic = { name: "get_time", description: "Current time", input_schema: { type: "object" as const, properties: { tz: { type: "string" } } } }

  it("an OpenAI caller forcing one function gets that tool called by Anthropic", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      messages: [{ role: "user", content: "what now" }],
      tools: [weatherToolOpenAi, timeToolOpenAi],
      tool_choice: { type: "function", function: { name: "get_time" } }
    })
    expect((completion.choices[0].message.tool_calls![0] as { function: { name: string } }).function.name).toBe("get_time")
    expect(bodyOf(only(fakes.anthropic)).tool_choice).toMatchObject({ type: "tool", name: "get_time" })
  })

  it("an OpenAI caller's tool_choice none keeps Anthropic from calling a tool", async () => {
    const completion = await openaiClient().chat.completions.create({
      model: "claude-e2e-model",
      messages: [{ role: "user", content: "Weather? use tool" }],
      tools: [weatherToolOpenAi],
      tool_choice: "none"
    })
    expect(completion.choices[0].message.tool_calls ?? []).toHaveLength(0)
    expect(completion.choices[0].message.content).toBe("echo: Weather? use tool")
    expect(bodyOf(only(fakes.anthropic)).tool_choice).toMatchObject({ type: "none" })
  })

  it("an Anthropic caller's tool_choice any makes OpenAI call a tool (required)", async () => {
    const message = await anthropicClient().messages.create({
      model: "gpt-4o",
      max_tokens: 50,
      messages: [{ role: "user", content: "anything" }],
      tools: [weatherToolAnthropic, timeToolAnthropic],
      tool_choice: { type: "any" }
    })
    expect(message.stop_reason).toBe("tool_use")
    expect(message.content.some((b) => b.type === "tool_use")).toBe(true)
    expect(bodyOf(only(fakes.openai)).tool_choice).toBe("required")
  })

  it("an Anthropic caller forcing one tool gets that tool called by OpenAI", async () => {
    const message = await anthropicClient().messages.create({
      model: "gpt-4o",
      max_tokens: 50,
      messages: [{ role: "user", content: "anything" }],
      tools: [weatherToolAnthropic, timeToolAnthropic],
      tool_choice: { type: "tool", name: "get_time" }
    })
    expect(message.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_time" })
    expect(bodyOf(only(fakes.openai)).tool_choice).toEqual({ type: "function", function: { name: "get_time" } })
  })
})

describe("anthropic → openai headers", () => {
  it("Anthropic-only headers (anthropic-version, anthropic-beta) are not sent to OpenAI", async () => {
    await anthropicClient({ "anthropic-beta": "tools-2024-04-04" }).messages.create({
      model: "gpt-4o",
      max_tokens: 50,
      messages: [{ role: "user", content: "hi" }]
    })
    const rec = only(fakes.openai)
    expect(rec.headers["anthropic-version"]).toBeUndefined()
    expect(rec.headers["anthropic-beta"]).toBeUndefined()
    expectAuth(rec, "openai")
  })
})
