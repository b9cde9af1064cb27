import { describe, expect, it } from "vitest"
import type { ChatResponse, ChatStreamEvent } from "../../src/domain/chat.ts"
import { encodeResponsesResponse, makeResponsesStreamEncoder } from "../../src/formats/openai-responses/index.ts"
import { encodeAll, parseSse } from "./sse.ts"

type Json = Record<string, any>

const start: ChatStreamEvent = { type: "message_start", id: "chatcmpl-1", model: "upstream-model", created: 1741476542 }
const text = (t: string): ChatStreamEvent => ({ type: "text_delta", text: t })
const toolStart = (index: number, id: string, name: string): ChatStreamEvent => ({
  type: "tool_call_start",
  index,
  id,
  name
})
const toolDelta = (index: number, argumentsDelta: string): ChatStreamEvent => ({
  type: "tool_call_delta",
  index,
  argumentsDelta
})
const finish = (stopReason: "end_turn" | "tool_use" | "max_tokens"): ChatStreamEvent => ({
  type: "message_delta",
  stopReason
})
const usage = (inputTokens: number, outputTokens: number): ChatStreamEvent => ({
  type: "usage",
  usage: { inputTokens, outputTokens }
})
const stop: ChatStreamEvent = { type: "message_stop" }

/** Runs the encoder and returns the parsed events, checking the framing on the way. */
const run = (events: ReadonlyArray<ChatStreamEvent>, model = "gpt-4.1"): Array<Json> => {
  const sse = encodeAll(makeResponsesStreamEncoder({ model }), events)
  const parsed = parseSse(sse).map((event) => {
    const data = JSON.parse(event.data) as Json
    expect(event.event).toBe(data.type)
    return data
  })
  expect(parsed.map((event) => event.sequence_number)).toEqual(parsed.map((_, i) => i))
  return parsed
}

/** Events without the Response objects, which are checked separately. */
const withoutResponse = (events: Array<Json>) =>
  events.map(({ sequence_number: _, response: __, ...rest }) => rest)

const msg = (content: Array<unknown>, status: string) => ({
  id: "msg_1",
  type: "message",
  status,
  role: "assistant",
  content
})

describe("Responses stream encoding", () => {
  it("encodes a text stream as the docs/reference/openai-other.md §7.4 event sequence", () => {
    const events = run([start, text("Hello"), text(" there!"), finish("end_turn"), usage(12, 3), stop])
    expect(events.map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed"
    ])
    const ref = { item_id: "msg_1", output_index: 0, content_index: 0 }
    expect(withoutResponse(events.slice(2, 9))).toEqual([
      { type: "response.output_item.added", output_index: 0, item: msg([], "in_progress") },
      { type: "response.content_part.added", ...ref, part: { type: "output_text", text: "", annotations: [], logprobs: [] } },
      { type: "response.output_text.delta", ...ref, delta: "Hello", logprobs: [] },
      { type: "response.output_text.delta", ...ref, delta: " there!", logprobs: [] },
      { type: "response.output_text.done", ...ref, text: "Hello there!", logprobs: [] },
      {
        type: "response.content_part.done",
        ...ref,
        part: { type: "output_text", text: "Hello there!", annotations: [], logprobs: [] }
      },
      {
        type: "response.output_item.done",
        output_index: 0,
        item: msg([{ type: "output_text", text: "Hello there!", annotations: [], logprobs: [] }], "completed")
      }
    ])
    for (const opening of events.slice(0, 2)) {
      expect(opening.response).toMatchObject({
        id: "resp_1",
        object: "response",
        created_at: 1741476542,
        status: "in_progress",
        model: "gpt-4.1",
        output: [],
        usage: null
      })
    }
    expect(events[9].response).toMatchObject({
      id: "resp_1",
      status: "completed",
      output: [msg([{ type: "output_text", text: "Hello there!", annotations: [], logprobs: [] }], "completed")],
      usage: {
        input_tokens: 12,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 3,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 15
      }
    })
  })

  it("closes the text item when a tool call starts and gives each item the next output_index", () => {
    const events = run([
      start,
      text("Let me check."),
      toolStart(0, "call_1", "get_weather"),
      toolDelta(0, "{\"city\":"),
      toolDelta(0, "\"Paris\"}"),
      toolStart(1, "call_2", "get_time"),
      toolDelta(1, "{}"),
      finish("tool_use"),
      usage(60, 18),
      stop
    ])
    const fc1 = { type: "function_call", id: "fc_1_1", call_id: "call_1", name: "get_weather" }
    const fc2 = { type: "function_call", id: "fc_1_2", call_id: "call_2", name: "get_time" }
    expect(withoutResponse(events.slice(7))).toEqual([
      { type: "response.output_item.done", output_index: 0, item: msg([{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }], "completed") },
      { type: "response.output_item.added", output_index: 1, item: { ...fc1, arguments: "", status: "in_progress" } },
      { type: "response.function_call_arguments.delta", item_id: "fc_1_1", output_index: 1, delta: "{\"city\":" },
      { type: "response.function_call_arguments.delta", item_id: "fc_1_1", output_index: 1, delta: "\"Paris\"}" },
      {
        type: "response.function_call_arguments.done",
        item_id: "fc_1_1",
        output_index: 1,
        name: "get_weather",
        arguments: "{\"city\":\"Paris\"}"
      },
      {
        type: "response.output_item.done",
        output_index: 1,
        item: { ...fc1, arguments: "{\"city\":\"Paris\"}", status: "completed" }
      },
      { type: "response.output_item.added", output_index: 2, item: { ...fc2, arguments: "", status: "in_progress" } },
      { type: "response.function_call_arguments.delta", item_id: "fc_1_2", output_index: 2, delta: "{}" },
      { type: "response.function_call_arguments.done", item_id: "fc_1_2", output_index: 2, name: "get_time", arguments: "{}" },
      { type: "response.output_item.done", output_index: 2, item: { ...fc2, arguments: "{}", status: "completed" } },
      { type: "response.completed" }
    ])
    expect(events.at(-1)!.response.output).toEqual([
      msg([{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }], "completed"),
      { ...fc1, arguments: "{\"city\":\"Paris\"}", status: "completed" },
      { ...fc2, arguments: "{}", status: "completed" }
    ])
  })

  it("ends with the same Response object the non-streamed encoder makes", () => {
    const response: ChatResponse = {
      id: "chatcmpl-1",
      model: "upstream-model",
      created: 1741476542,
      content: [
        { type: "text", text: "Let me check." },
        { type: "tool_call", id: "call_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 60, outputTokens: 18 }
    }
    const events = run([
      start,
      text("Let me "),
      text("check."),
      toolStart(0, "call_1", "get_weather"),
      toolDelta(0, "{\"city\":\"Paris\"}"),
      usage(60, 18),
      finish("tool_use"),
      stop
    ])
    expect(events.at(-1)!.response).toEqual(encodeResponsesResponse(response, { model: "gpt-4.1" }))
  })

  it("holds back a tool call that starts while another is open and sends it whole after it", () => {
    const events = run([
      start,
      toolStart(0, "call_a", "a"),
      toolStart(1, "call_b", "b"),
      toolDelta(1, "{\"b\":"),
      toolDelta(0, "{\"a\":1}"),
      toolDelta(1, "2}"),
      finish("tool_use"),
      stop
    ])
    expect(withoutResponse(events.slice(2, -1)).map((e) => [e.type, e.output_index, e.delta ?? e.arguments])).toEqual([
      ["response.output_item.added", 0, undefined],
      ["response.function_call_arguments.delta", 0, "{\"a\":1}"],
      ["response.function_call_arguments.done", 0, "{\"a\":1}"],
      ["response.output_item.done", 0, undefined],
      ["response.output_item.added", 1, undefined],
      ["response.function_call_arguments.delta", 1, "{\"b\":2}"],
      ["response.function_call_arguments.done", 1, "{\"b\":2}"],
      ["response.output_item.done", 1, undefined]
    ])
    expect(events.at(-1)!.response.output.map((item: Json) => [item.call_id, item.arguments])).toEqual([
      ["call_a", "{\"a\":1}"],
      ["call_b", "{\"b\":2}"]
    ])
  })

  it("reports input usage known at the start when no usage event follows", () => {
    const events = run([
      { ...start, usage: { inputTokens: 21, outputTokens: 1 } },
      text("Hi"),
      finish("end_turn"),
      stop
    ])
    expect(events.at(-1)!.response.usage).toMatchObject({ input_tokens: 21, output_tokens: 1, total_tokens: 22 })
  })

  it("ends a cut-off answer with response.incomplete and marks the cut item incomplete", () => {
    const events = run([start, text("Once upon"), finish("max_tokens"), usage(5, 2), stop])
    expect(events.at(-2)).toMatchObject({ type: "response.output_item.done", item: { status: "incomplete" } })
    expect(events.at(-1)).toMatchObject({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }
    })
  })

  it("ends with an error frame and nothing after it when the upstream fails mid-stream", () => {
    const encoder = makeResponsesStreamEncoder({ model: "gpt-4.1" })
    const sse = encodeAll(encoder, [
      start,
      text("Hel"),
      { type: "error", error: { type: "overloaded_error", message: "Overloaded", status: 529 } }
    ])
    expect(encoder.push(text("lo")) + encoder.push(stop)).toBe("")
    const events = parseSse(sse)
    expect(events.at(-1)).toEqual({
      event: "error",
      data: JSON.stringify({
        type: "error",
        sequence_number: 5,
        code: "rate_limit_exceeded",
        message: "Overloaded",
        param: null,
        error: { type: "rate_limit_error", code: "rate_limit_exceeded", message: "Overloaded", param: null }
      })
    })
    expect(events.map((event) => event.event)).not.toContain("response.completed")
  })

  it("ends a stream that stopped without a finish with an error frame, never response.completed", () => {
    const events = run([start, text("Hel"), stop])
    expect(events.at(-1)).toEqual({
      type: "error",
      sequence_number: 5,
      code: "upstream_error",
      message: "upstream stream ended before a finish reason",
      param: null,
      error: {
        type: "api_error",
        code: "upstream_error",
        message: "upstream stream ended before a finish reason",
        param: null
      }
    })
  })

  it("sends the opening events when the upstream skipped its start, and only an error frame for an immediate error", () => {
    const events = run([text("Hi"), finish("end_turn"), stop], "m")
    expect(events.map((event) => event.type).slice(0, 3)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added"
    ])
    expect(events.at(-1)!.type).toBe("response.completed")
    const failed = run([{ type: "error", error: { type: "server_error", message: "boom", status: 500 } }])
    expect(failed.map((event) => event.type)).toEqual(["error"])
  })

  it("ignores empty deltas and content after the finish", () => {
    const events = run([start, text(""), toolDelta(0, ""), text("A"), finish("end_turn"), text("late"), usage(1, 1), stop])
    expect(events.filter((event) => event.type === "response.output_text.delta").map((event) => event.delta)).toEqual([
      "A"
    ])
    expect(events.at(-1)!.response.output[0].content[0].text).toBe("A")
  })
})
