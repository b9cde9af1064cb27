/**
 * A cached answer replayed as a stream (`responseEvents` through each caller
 * format's stream encoder) is accepted by the official SDKs' own stream
 * helpers, and they rebuild from it the same text, tool calls, usage and stop
 * reason as from the same answer served as JSON. The SDKs read the bodies
 * through a custom `fetch`, without a network; their requests are decoded
 * with the gateway's own request decoders, as a hit would be.
 */
import { Result } from "effect"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import type { CallerFormat, ChatRequest, ChatResponse } from "../../src/domain/index.ts"
import { CALLER_CODECS, responseEvents } from "../../src/formats/index.ts"
import { encodeAll } from "./sse.ts"

/** Answers every SDK call with `answer` encoded for `format`: as SSE when the request streams, else as JSON. */
const replaying = (format: CallerFormat, answer: ChatResponse) =>
  async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const codec = CALLER_CODECS[format]
    const decoded = codec.decodeRequest(JSON.parse(String(init?.body)))
    if (Result.isFailure(decoded)) return new Response(JSON.stringify({ error: { message: decoded.failure.message } }), { status: 400 })
    const request: ChatRequest = decoded.success
    return request.stream
      ? new Response(encodeAll(codec.streamEncoder(request), responseEvents(answer)), { headers: { "content-type": "text/event-stream" } })
      : new Response(JSON.stringify(codec.encodeResponse(answer, request)), { headers: { "content-type": "application/json" } })
  }

const TOOLS_ANSWER: ChatResponse = {
  id: "msg_01Cached",
  model: "claude-cached-model",
  created: 1_741_476_600,
  content: [
    { type: "text", text: "Let me check both cities." },
    { type: "tool_call", id: "toolu_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
    { type: "tool_call", id: "toolu_rome", name: "get_weather", arguments: "{\"city\":\"Rome\",\"unit\":\"c\"}" }
  ],
  stopReason: "tool_use",
  usage: { inputTokens: 120, outputTokens: 41, cacheReadTokens: 100 }
}

const STOP_SEQUENCE_ANSWER: ChatResponse = {
  id: "msg_01Stop",
  model: "claude-cached-model",
  created: 1_741_476_601,
  content: [{ type: "text", text: "One, two, three" }],
  stopReason: "stop_sequence",
  stopSequence: "four",
  usage: { inputTokens: 12, outputTokens: 6 }
}

const weatherParameters = { type: "object", properties: { city: { type: "string" }, unit: { type: "string" } }, required: ["city"] }

describe("OpenAI Chat Completions: chat.completions.stream().finalChatCompletion()", () => {
  const client = (answer: ChatResponse) => new OpenAI({ apiKey: "x", baseURL: "http://127.0.0.1:1/v1", fetch: replaying("openai", answer), maxRetries: 0 })
  const body = {
    model: "gpt-4o",
    messages: [{ role: "user" as const, content: "Weather in Paris and Rome?" }],
    tools: [{ type: "function" as const, function: { name: "get_weather", parameters: weatherParameters } }]
  }

  it("rebuilds the text, both tool calls, the usage and the finish reason of the JSON answer", async () => {
    const streamed = await client(TOOLS_ANSWER).chat.completions.stream({ ...body, stream_options: { include_usage: true } }).finalChatCompletion()
    const json = await client(TOOLS_ANSWER).chat.completions.create(body)
    const message = streamed.choices[0].message
    expect(message.content).toBe("Let me check both cities.")
    expect(message.tool_calls?.map((call) => call.type === "function" && [call.id, call.function.name, call.function.arguments])).toEqual([
      ["toolu_paris", "get_weather", "{\"city\":\"Paris\"}"],
      ["toolu_rome", "get_weather", "{\"city\":\"Rome\",\"unit\":\"c\"}"]
    ])
    expect(streamed.choices[0].finish_reason).toBe("tool_calls")
    expect(streamed.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 41, total_tokens: 161, prompt_tokens_details: { cached_tokens: 100 } })
    expect(message.content).toBe(json.choices[0].message.content)
    expect(message.tool_calls).toEqual(json.choices[0].message.tool_calls)
    expect(streamed.usage).toEqual(json.usage)
  })

  it("without include_usage the replay has no usage, like the API", async () => {
    const streamed = await client(STOP_SEQUENCE_ANSWER).chat.completions.stream({ model: "gpt-4o", messages: body.messages }).finalChatCompletion()
    expect(streamed.choices[0].message.content).toBe("One, two, three")
    expect(streamed.choices[0].finish_reason).toBe("stop")
    expect(streamed.usage ?? undefined).toBeUndefined()
  })
})

describe("Anthropic Messages: messages.stream().finalMessage()", () => {
  const client = (answer: ChatResponse) => new Anthropic({ apiKey: "x", baseURL: "http://127.0.0.1:1", fetch: replaying("anthropic", answer), maxRetries: 0 })
  const body = {
    model: "claude-cached-model",
    max_tokens: 256,
    messages: [{ role: "user" as const, content: "Weather in Paris and Rome?" }],
    tools: [{ name: "get_weather", input_schema: weatherParameters as { type: "object" } }]
  }

  it("rebuilds the text block, both tool_use blocks, the usage and the stop reason of the JSON answer", async () => {
    const streamed = await client(TOOLS_ANSWER).messages.stream(body).finalMessage()
    const json = await client(TOOLS_ANSWER).messages.create(body)
    const blocks = (message: Anthropic.Message) =>
      message.content.map((block) => block.type === "text" ? [block.text] : block.type === "tool_use" ? [block.id, block.name, block.input] : [block.type])
    expect(blocks(streamed)).toEqual([
      ["Let me check both cities."],
      ["toolu_paris", "get_weather", { city: "Paris" }],
      ["toolu_rome", "get_weather", { city: "Rome", unit: "c" }]
    ])
    expect(streamed.stop_reason).toBe("tool_use")
    expect(streamed.usage).toMatchObject({ output_tokens: 41, cache_read_input_tokens: 100 })
    expect(blocks(streamed)).toEqual(blocks(json))
    expect(streamed.usage).toEqual(json.usage)
  })

  it("keeps the stop sequence", async () => {
    const streamed = await client(STOP_SEQUENCE_ANSWER).messages.stream({ model: "claude-cached-model", max_tokens: 64, messages: body.messages }).finalMessage()
    expect(streamed.stop_reason).toBe("stop_sequence")
    expect(streamed.stop_sequence).toBe("four")
    expect(streamed.content).toEqual([expect.objectContaining({ type: "text", text: "One, two, three" })])
  })
})

describe("OpenAI Responses: responses.stream().finalResponse()", () => {
  const client = (answer: ChatResponse) => new OpenAI({ apiKey: "x", baseURL: "http://127.0.0.1:1/v1", fetch: replaying("responses", answer), maxRetries: 0 })
  const body = {
    model: "gpt-4.1",
    input: "Weather in Paris and Rome?",
    tools: [{ type: "function" as const, name: "get_weather", parameters: weatherParameters, strict: false }]
  }

  it("rebuilds output_text, both function calls and the usage of the JSON answer", async () => {
    const streamed = await client(TOOLS_ANSWER).responses.stream(body).finalResponse()
    const json = await client(TOOLS_ANSWER).responses.create(body)
    expect(streamed.output_text).toBe("Let me check both cities.")
    const calls = (response: OpenAI.Responses.Response) =>
      response.output.flatMap((item) => item.type === "function_call" ? [[item.call_id, item.name, item.arguments]] : [])
    expect(calls(streamed)).toEqual([
      ["toolu_paris", "get_weather", "{\"city\":\"Paris\"}"],
      ["toolu_rome", "get_weather", "{\"city\":\"Rome\",\"unit\":\"c\"}"]
    ])
    expect(streamed.usage).toMatchObject({ input_tokens: 120, output_tokens: 41, total_tokens: 161, input_tokens_details: { cached_tokens: 100 } })
    expect(streamed.status).toBe("completed")
    expect(streamed.output_text).toBe(json.output_text)
    expect(calls(streamed)).toEqual(calls(json))
    expect(streamed.usage).toEqual(json.usage)
  })
})
