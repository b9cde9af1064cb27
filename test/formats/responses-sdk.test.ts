/**
 * The official `openai` SDK accepts what the Responses encoders produce: its
 * own parser and stream accumulator read the encoded bodies through a custom
 * `fetch`, without a network. The request the SDK sends is decoded too, so
 * the whole caller-side round trip is covered.
 */
import { Result } from "effect"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import type { ChatRequest, ChatResponse, ChatStreamEvent } from "../../src/domain/chat.ts"
import {
  decodeResponsesRequest,
  encodeResponsesResponse,
  makeResponsesStreamEncoder
} from "../../src/formats/openai-responses/index.ts"
import { encodeAll } from "./sse.ts"

interface Served {
  readonly client: OpenAI
  /** The decoded request bodies the SDK sent, in order. */
  readonly requests: Array<ChatRequest>
}

/** A client whose every call is answered by `answer(request)` (a JSON body or SSE text). */
const serve = (answer: (request: ChatRequest) => { json: unknown } | { sse: string }): Served => {
  const requests: Array<ChatRequest> = []
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const decoded = decodeResponsesRequest(JSON.parse(String(init?.body)))
    if (Result.isFailure(decoded)) return new Response(JSON.stringify({ error: { message: decoded.failure.message } }), { status: 400 })
    requests.push(decoded.success)
    const body = answer(decoded.success)
    return "json" in body
      ? new Response(JSON.stringify(body.json), { headers: { "content-type": "application/json" } })
      : new Response(body.sse, { headers: { "content-type": "text/event-stream" } })
  }
  return {
    client: new OpenAI({ apiKey: "x", baseURL: "http://127.0.0.1:1/v1", fetch, maxRetries: 0 }),
    requests
  }
}

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather by city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false
  },
  strict: true
}

const TOOL_ANSWER: ChatResponse = {
  id: "msg_01T1x",
  model: "claude-sonnet-4-5",
  created: 1741476600,
  content: [
    { type: "text", text: "Let me check." },
    { type: "tool_call", id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
  ],
  stopReason: "tool_use",
  usage: { inputTokens: 60, outputTokens: 18 }
}

const TOOL_STREAM: ReadonlyArray<ChatStreamEvent> = [
  { type: "message_start", id: "msg_01T1x", model: "claude-sonnet-4-5", created: 1741476600 },
  { type: "text_delta", text: "Let me " },
  { type: "text_delta", text: "check." },
  { type: "tool_call_start", index: 0, id: "toolu_1", name: "get_weather" },
  { type: "tool_call_delta", index: 0, argumentsDelta: "{\"city\":" },
  { type: "tool_call_delta", index: 0, argumentsDelta: "\"Paris\"}" },
  { type: "message_delta", stopReason: "tool_use" },
  { type: "usage", usage: { inputTokens: 60, outputTokens: 18 } },
  { type: "message_stop" }
]

const streamOf = (events: ReadonlyArray<ChatStreamEvent>) => (request: ChatRequest) => ({
  sse: encodeAll(makeResponsesStreamEncoder({ model: request.model, request }), events)
})

describe("openai SDK compatibility of the Responses encoders", () => {
  it("responses.create parses an encoded Response: output_text and function calls", async () => {
    const { client, requests } = serve((request) => ({
      json: encodeResponsesResponse(TOOL_ANSWER, { model: request.model, request })
    }))
    const response = await client.responses.create({
      model: "gpt-4.1",
      instructions: "Be terse.",
      input: [{ role: "user", content: "Weather in Paris?" }],
      tools: [WEATHER_TOOL]
    })
    expect(requests[0]).toMatchObject({
      model: "gpt-4.1",
      system: [{ type: "text", text: "Be terse." }],
      messages: [{ role: "user", content: [{ type: "text", text: "Weather in Paris?" }] }],
      tools: [{ name: "get_weather", strict: true }]
    })
    expect(response.output_text).toBe("Let me check.")
    expect(response.status).toBe("completed")
    expect(response.model).toBe("gpt-4.1")
    expect(response.instructions).toBe("Be terse.")
    const calls = response.output.filter((item) => item.type === "function_call")
    expect(calls).toEqual([
      {
        type: "function_call",
        id: "fc_01T1x_1",
        call_id: "toolu_1",
        name: "get_weather",
        arguments: "{\"city\":\"Paris\"}",
        status: "completed"
      }
    ])
    expect(response.usage).toEqual({
      input_tokens: 60,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 18,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 78
    })
  })

  it("responses.stream accumulates an encoded stream into the final response, deltas and snapshots included", async () => {
    const { client, requests } = serve(streamOf(TOOL_STREAM))
    const stream = client.responses.stream({
      model: "gpt-4.1",
      input: "Weather in Paris?",
      tools: [WEATHER_TOOL]
    })
    const snapshots: Array<string> = []
    const argumentSnapshots: Array<string> = []
    stream.on("response.output_text.delta", (event) => snapshots.push(event.snapshot))
    stream.on("response.function_call_arguments.delta", (event) => argumentSnapshots.push(event.snapshot))
    const final = await stream.finalResponse()
    expect(requests[0].stream).toBe(true)
    expect(snapshots).toEqual(["Let me ", "Let me check."])
    expect(argumentSnapshots).toEqual(["{\"city\":", "{\"city\":\"Paris\"}"])
    expect(final.output_text).toBe("Let me check.")
    expect(final.status).toBe("completed")
    const call = final.output.find((item) => item.type === "function_call")
    expect(call).toMatchObject({ call_id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
    // A strict tool's arguments are parsed by the SDK itself.
    expect(call).toMatchObject({ parsed_arguments: { city: "Paris" } })
    expect(final.usage?.total_tokens).toBe(78)
  })

  it("responses.create with stream: true yields every event, ending with response.completed", async () => {
    const { client } = serve(streamOf(TOOL_STREAM))
    const stream = await client.responses.create({ model: "gpt-4.1", input: "Weather?", stream: true })
    const types: Array<string> = []
    let text = ""
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === "response.output_text.delta") text += event.delta
    }
    expect(text).toBe("Let me check.")
    expect(types[0]).toBe("response.created")
    expect(types.at(-1)).toBe("response.completed")
  })

  it("a cut-off answer reaches the SDK as an incomplete response with its text", async () => {
    const { client } = serve(streamOf([
      { type: "message_start", id: "chatcmpl-9", model: "gpt-4o", created: 1 },
      { type: "text_delta", text: "Once upon" },
      { type: "message_delta", stopReason: "max_tokens" },
      { type: "message_stop" }
    ]))
    const final = await client.responses.stream({ model: "gpt-4.1", input: "Story" }).finalResponse()
    expect(final.status).toBe("incomplete")
    expect(final.incomplete_details).toEqual({ reason: "max_output_tokens" })
    expect(final.output_text).toBe("Once upon")
  })

  it("an error mid-stream makes the SDK throw with the upstream message", async () => {
    const { client } = serve(streamOf([
      { type: "message_start", id: "chatcmpl-9", model: "gpt-4o", created: 1 },
      { type: "text_delta", text: "Hel" },
      { type: "error", error: { type: "overloaded_error", message: "Overloaded", status: 529 } }
    ]))
    const stream = client.responses.stream({ model: "gpt-4.1", input: "Hi" })
    await expect(stream.finalResponse()).rejects.toThrow(/Overloaded/)
    const iterated = await client.responses.create({ model: "gpt-4.1", input: "Hi", stream: true })
    await expect((async () => {
      for await (const _ of iterated) { /* drain */ }
    })()).rejects.toBeInstanceOf(OpenAI.APIError)
  })

  it("a stream cut off before its finish makes the SDK throw instead of returning a partial response", async () => {
    const { client } = serve(streamOf([
      { type: "message_start", id: "chatcmpl-9", model: "gpt-4o", created: 1 },
      { type: "text_delta", text: "Hel" },
      { type: "message_stop" }
    ]))
    await expect(client.responses.stream({ model: "gpt-4.1", input: "Hi" }).finalResponse()).rejects.toThrow(
      /ended before a finish reason/
    )
  })

  it("the SDK's function-call turn round-trips: its output items sent back as input decode to a tool turn", async () => {
    const { client, requests } = serve((request) => ({
      json: encodeResponsesResponse(TOOL_ANSWER, { model: request.model, request })
    }))
    const first = await client.responses.create({ model: "gpt-4.1", input: "Weather in Paris?", tools: [WEATHER_TOOL] })
    // Sent back verbatim, as callers do for a function-call turn.
    const history = first.output.filter((item): item is
      | OpenAI.Responses.ResponseOutputMessage
      | OpenAI.Responses.ResponseFunctionToolCall => item.type === "message" || item.type === "function_call")
    const call = history.find((item) => item.type === "function_call")!
    await client.responses.create({
      model: "gpt-4.1",
      tools: [WEATHER_TOOL],
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...history,
        { type: "function_call_output", call_id: call.type === "function_call" ? call.call_id : "", output: "18C" }
      ]
    })
    expect(requests[1].messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check." },
          { type: "tool_call", id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
        ]
      },
      { role: "user", content: [{ type: "tool_result", toolCallId: "toolu_1", content: [{ type: "text", text: "18C" }] }] }
    ])
    expect(requests[1].unmapped).toEqual({})
  })
})
