/**
 * Every caller → provider pair, driven by the official SDKs against fake upstreams
 * that speak the real wire formats: plain text, streamed text, a tool call (streamed
 * and not) and a multi-turn conversation with tool results. Each test checks what the
 * SDK parsed AND what reached the upstream (translated body, auth form, headers).
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import type { IncomingHttpHeaders } from "node:http"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { promptTokensOf, startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream, RecordedRequest } from "../fixtures/fake-upstream.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const CALLER_KEY = "sk-caller-own-key-1234"
const PLATFORM_SECRET = "platform-secret-do-not-forward"
/** Headers only the gateway may read; none of them may reach a provider. */
const GATEWAY_HEADERS = {
  "x-gw-authorization": `Bearer ${PLATFORM_SECRET}`,
  "x-gw-project-id": "proj-e2e"
}

let openaiUp: FakeUpstream
let anthropicUp: FakeUpstream
let azureUp: FakeUpstream
let gw: RunningGateway

beforeAll(async () => {
  openaiUp = await startFakeUpstream({ kind: "openai" })
  anthropicUp = await startFakeUpstream({ kind: "anthropic" })
  azureUp = await startFakeUpstream({ kind: "azure" })
  gw = await startGateway(
    {
      providers: {
        openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o"], credential: "env::PAIRS_OPENAI_KEY" },
        anthropic: { base_url: anthropicUp.url, models: ["claude-e2e-model", "claude-e2e-small"], credential: "env::PAIRS_ANTHROPIC_KEY" },
        azure: { base_url: azureUp.url, models: ["my-deployment"], api_version: "2024-10-21", credential: "env::PAIRS_AZURE_KEY" }
      },
      models: { "claude-e2e-small": { max_tokens: 1234 } },
      routing: { retry: { max_retries: 0 } }
    },
    { PAIRS_OPENAI_KEY: "sk-configured-openai", PAIRS_ANTHROPIC_KEY: "sk-configured-anthropic", PAIRS_AZURE_KEY: "configured-azure" }
  )
})
afterAll(async () => {
  await gw.close()
  await Promise.all([openaiUp.close(), anthropicUp.close(), azureUp.close()])
})
beforeEach(() => {
  openaiUp.reset()
  anthropicUp.reset()
  azureUp.reset()
})

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
  { pair: "openai → openai", model: "gpt-4o", upstream: () => openaiUp, provider: "openai" as const },
  { pair: "openai → azure", model: "my-deployment", upstream: () => azureUp, provider: "azure" as const },
  { pair: "openai → anthropic", model: "claude-e2e-model", upstream: () => anthropicUp, provider: "anthropic" as const }
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
    const body = bodyOf(only(anthropicUp))
    expect(body.stop_sequences).toEqual(["END"])
    expect(body).not.toHaveProperty("stop")
  })

  it("defaults max_tokens to the model's [models.X] max_tokens when the caller sends none", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-small", messages: [{ role: "user", content: "hi" }] })
    expect(bodyOf(only(anthropicUp)).max_tokens).toBe(1234)
  })

  it("keeps the caller's own max_tokens over any default", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-small", max_tokens: 77, messages: [{ role: "user", content: "hi" }] })
    expect(bodyOf(only(anthropicUp)).max_tokens).toBe(77)
  })

  it("sends x-api-key and the gateway's anthropic-version, never the caller's bearer header", async () => {
    await openaiClient().chat.completions.create({ model: "claude-e2e-model", messages: [{ role: "user", content: "hi" }] })
    const rec = only(anthropicUp)
    expect(rec.headers["anthropic-version"]).toBe("2023-06-01")
    expectAuth(rec, "anthropic")
  })
})

// ---------------------------------------------------------------------------
// Anthropic caller (@anthropic-ai/sdk) → Anthropic provider, OpenAI provider
// ---------------------------------------------------------------------------

const anthropicCallerCases = [
  { pair: "anthropic → anthropic", model: "claude-e2e-model", upstream: () => anthropicUp, provider: "anthropic" as const },
  { pair: "anthropic → openai", model: "gpt-4o", upstream: () => openaiUp, provider: "openai" as const }
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
    const rec = only(anthropicUp)
    expect(rec.headers["anthropic-version"]).toBe("2026-10-21")
    expect(rec.headers["anthropic-beta"]).toBe("tools-2024-04-04")
    expectAuth(rec, "anthropic")
  })
})
